"""`kraftcheck demo`: the main job on the embedded defaults.

Two sizes (STAGES holds each stage's parameters for both): `kraftcheck demo` (`make demo`)
runs every stage on a small documented subset in a few minutes, `kraftcheck demo --full`
(`make ci`) is CI's job.  Default: TLC on the manifests' `demo` selection (per spec an
exhaustive ci config that holds and a bug config that is found: `kraftcheck tlc list` marks
them), 5 seeds per corpus and per liveness profile, 3 reassignment seeds (chaos runs of 600
steps), every corpus but elr-graph-chaos (DEFAULT_CORPORA), the Kafka corpus inside
kraft-graph-small's bounds and the reassignment corpus inside reassign-graph-grow's judged in
neighbourhood mode under those configs (no graph of theirs built), the fail-closed variants
made of a trace's first 25 steps (FAIL_CLOSED_STEPS).  --full: the whole ci profile, 10 seeds,
5 reassignment seeds (1,500 steps), every corpus, those two corpora in full-graph mode, the
variants of the whole trace.  The other stages are the same in both.  Both build the graphs
the graph corpora need in the tlc stage, beside its TLC runs (a selected graph config is
judged on its build's run), and run the reassign stage's finding there (two TLC processes at
a time); review and reassign take those runs from the result cache.

Stages, each reported in the summary (out/demo/summary.json) with its wall-clock `seconds`
and its `cpu_seconds` (this process and its children: TLC, the Kafka harness); `--stage NAME`
runs only the stages named, on the earlier stages' outputs in --out:
  1. tlc       the demo selection (default) or the ci profile of every spec (--full), each
               config judged against the manifest
  2. simulate  a small deterministic corpus of refimpl traces for both protocols and fault
               profiles none and chaos, plus corpora under the two no-symmetry graph configs'
               bounds (so their traces stay inside TLC's state graph); see CORPORA
  3. validate  every trace against the spec: the graph corpora by lookup in the dumped state
               graph (full-graph mode), the others in neighbourhood mode
  3a. kafka-elr  Apache Kafka 4.x's KIP-966 controller driven by the refimpl's brokers
               (kafka_bridge/elr.py, `simulate --impl kafka --protocol elr`): a chaos corpus
               inside elr-kafka-graph-small's bounds, valid under that kafka-4.x judge
               (neighbourhood mode) with no invariant violated
  3b. kafka    Apache Kafka 3.7's raft client in the harness (kafka_bridge, `simulate --impl
               kafka`): a chaos corpus (neighbourhood mode) and one inside kraft-graph-small's
               bounds (neighbourhood mode under kraft-graph-small-kafka-3.7; --full: full-graph
               mode), every trace valid and no invariant violated, and each
               planted environment fault flagged within KAFKA_PLANT_SEEDS seeds (judged by the
               Kafka 3.7 judges of docs/kafka-conformance.md, so they stay out of the stats
               stage, whose distributed validation uses the KIP graph; `kraftcheck stats` over
               both corpora compares the two implementations)
  3c. replay   model-guided replay (docs/replay.md): a seeded sample of kraft-graph-small's
               edges (200; --full 1000) driven on the refimpl along shortest paths, none
               diverged (the whole graph is benchmarks/bench_replay.py)
  4. stats     the Spark job over the whole corpus and the verdicts: Parquet tables and an
               HTML report with plots (out/demo/stats/report.html), whose coverage section
               colors the graph's edges by the replay stage's outcomes
  5. proofs    the z3 proofs of the shared rules (`kraftcheck prove`): every obligation must
               come out as expected (rules proved, planted variants and findings refuted)
  6. review    the reviewer's artefacts: the spec typeset as HTML (out/demo/spec/index.html)
               and the counterexample of REVIEW_DIAGRAM drawn as a message-sequence chart
               (out/demo/diagrams/NAME.svg)
  7. liveness  the refimpl's online liveness check per fault profile (faults stop, then a
               leader must be elected and every replica catch up within the bound), for
               KIP-595 and for KIP-966 (a live leader, the full ISR, every HWM caught up, or
               a partition offline by the election order's design), and the planted KIP-966
               liveness bug isr-expand-off-by-one flagged
  8. reassign  KIP-642 (issue 12): a reassignment corpus under chaos (no invariant violated,
               reassignments completing: time to complete, epochs per reassignment), a corpus
               inside reassign-graph-grow's bounds validated against spec/KRaftReassign.tla
               (neighbourhood mode; --full: full-graph mode), each planted reassignment bug
               flagged within 50 seeds,
               and the draft's availability finding (reassign-finding-observer-vote-deadlock:
               a growing quorum that can never elect a leader again) found by TLC
  9. fail-closed  the checker's self-check (trace_checker/selfcheck.py): hostile variants of a
               trace of the kraft graph corpus (a header weakening the liveness judge, broken
               format rules, values TLC cannot hold or compare, steps of no spec action, a
               trace observing nothing) judged in one run, each with the verdict it must get
               (made of the trace's first 25 steps; --full: the whole trace)
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import typer

from kraftcheck.commands.tlc import default_jobs, run_entries
from kraftcore.output import console, err_console, print_json, write_atomic
from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.java import ToolchainError, toolchain
from kraftcore.tlc.manifest import ManifestError, load_manifest
from kraftcheck.tlc.report import suite_table


# TLC workers per run in the demo: the tlc stage runs two configs at once (default_jobs), one
# worker each; the later stages' runs of the same configs (review, reassign) use the same
# command line, so they are result-cache hits (kraftcore/tlc/cache.py)
TLC_WORKERS = 1


def _stage_tlc(selection: str, only: str | None, show: bool, graphs: tuple[str, ...] = (),
               prefetch: tuple[str, ...] = ()) -> dict:
    """selection: "demo" (the configs the manifests mark `demo = true`: per spec an
    exhaustive ci config that holds and a bug config that is found) or a profile (ci).

    graphs: the state graphs the later stages load (validate, stats, fail-closed, replay),
    built here in a background thread while the other configs run (trace_checker/fullgraph.py:
    TLC with the dump, then the parse); a selected config among them is judged on that run's
    output (the dump leaves TLC's result unchanged: a result-cache hit) instead of a second
    TLC run.  prefetch: configs a later stage runs (the reassign stage's finding), run here in
    the same pool of TLC processes and reported apart (`prefetched`); the later stage takes
    the result from the cache."""
    import re
    from concurrent.futures import ThreadPoolExecutor

    from kraftcore.tlc.runner import run_config
    from trace_checker.fullgraph import GraphBuildError, load_graph
    manifest = load_manifest()
    entries = [e for e in manifest
               if (e.demo if selection == "demo" else e.profile == selection)
               and (only is None or re.search(only, e.name))]
    extra = [e for e in manifest if e.name in prefetch and e not in entries]
    built = [e for e in entries if e.name in graphs]
    t0 = time.monotonic()
    problems = []

    def build() -> None:
        for name in graphs:
            try:
                load_graph(name)
            except (GraphBuildError, ManifestError) as e:   # judged below on a plain run
                problems.append(f"graph {name}: {e}")
    with ThreadPoolExecutor(1) as background:
        job = background.submit(build) if graphs else None
        rest = [e for e in entries + extra if e not in built]
        ran = dict(zip((e.name for e in rest),
                       run_entries(rest, show_progress=show, workers=TLC_WORKERS,
                                   jobs=default_jobs())))
        if job is not None:
            job.result()
    for e in built:     # the graph build's run (workers: the manifest's), from the cache
        ran[e.name] = run_config(e, cache=True)
    results = [ran[e.name] for e in entries]
    if show:
        console.print(suite_table(results))
    return {
        "stage": "tlc", "profile": selection, "configs": len(results),
        "as_expected": sum(r.as_expected for r in results),
        "ok": all(r.as_expected for r in results) and bool(results),
        "seconds": round(time.monotonic() - t0, 1),
        "graphs": list(graphs), "graph_problems": problems,
        "prefetched": [{"name": e.name, "as_expected": ran[e.name].as_expected}
                       for e in extra],
        "results": [r.to_json(with_counterexample=False) for r in results],
    }


# The corpora of the demo: (name, protocol, fault profile, bounds config or None, graph
# mode).  Graph-mode corpora are simulated under a no-symmetry graph config and validated by
# lookup in its dumped state graph; the others in neighbourhood mode (KIP-595 unbounded;
# KIP-966 under the loose bounds of elr-deep-sim-rf3-long, whose values the checker needs:
# the ci bounds hold one record, so their traces end after a few steps).
GRAPH_CONFIGS = {"kraft": "kraft-graph-small", "elr": "elr-graph-small"}
CORPORA = [(f"kraft-{f}", "kraft", f, None, False) for f in ("none", "chaos")] + [
    (f"elr-{f}", "elr", f, "elr-deep-sim-rf3-long", False) for f in ("none", "chaos")] + [
    (f"{p}-graph-chaos", p, "chaos", g, True) for p, g in GRAPH_CONFIGS.items()]


def _corpora(names: list[str] | None) -> list[tuple]:
    """The CORPORA named (all when None), in CORPORA's order."""
    unknown = set(names or ()) - {c[0] for c in CORPORA}
    if unknown:
        raise ValueError(f"no demo corpus named {', '.join(sorted(unknown))}")
    return [c for c in CORPORA if names is None or c[0] in names]


# The default demo leaves out elr-graph-chaos: its graph (elr-graph-small, 169,132 states
# without symmetry) is the slowest build of the demo; full-graph mode is shown by
# kraft-graph-chaos, KIP-966 by the elr corpora in neighbourhood mode.  --full has all.
DEFAULT_CORPORA = [c[0] for c in CORPORA if c[0] != "elr-graph-chaos"]
# the graphs the tlc stage builds for the later stages: those of the corpora in graph mode
DEMO_GRAPHS = tuple(c[3] for c in _corpora(DEFAULT_CORPORA) if c[4])
FULL_GRAPHS = tuple(c[3] for c in CORPORA if c[4])


def _stage_simulate(out: Path, seeds: int, show: bool, corpora: list[str] | None = None) -> dict:
    from refimpl.sim.corpus import simulate_corpus
    t0 = time.monotonic()
    runs = []
    ok = True
    for name, protocol, faults, cfg, _graph in _corpora(corpora):
        bounds = str(REPO_ROOT / "tlc_configs" / f"{cfg}.cfg") if cfg else None
        # a corpus folder holds this run's traces only (no stale files of an earlier run)
        shutil.rmtree(out / "traces" / name, ignore_errors=True)
        m = simulate_corpus(protocol=protocol, seeds=range(seeds), faults=faults, steps=300,
                            out=out / "traces" / name, bounds=bounds, show_progress=show)
        violations = sum(len(t.get("invariant_violations", [])) for t in m["traces"])
        ok = ok and violations == 0
        runs.append({"corpus": name, "protocol": protocol, "faults": faults, "bounds": cfg,
                     "traces": len(m["traces"]), "steps": sum(t["steps"] for t in m["traces"]),
                     "invariant_violations": violations, "dir": str(out / "traces" / name)})
    return {"stage": "simulate", "ok": ok, "runs": runs,
            "seconds": round(time.monotonic() - t0, 1)}


# a KIP-966 liveness bug (refimpl/bugs.py) only the liveness check can catch
ELR_LIVENESS_BUG = "isr-expand-off-by-one"


def _stage_liveness(seeds: int, show: bool) -> dict:
    """KIP-595 liveness (issue 11) and KIP-966 liveness: per default fault profile, `seeds`
    runs whose faults stop at 20 s must recover within 15 s (refimpl/sim/liveness.py), with
    no invariant violated; and the planted KIP-966 liveness bug (every step a spec transition)
    must leave some run of the chaos profile unrecovered."""
    from refimpl.sim.faults import DEFAULT_PROFILES
    from refimpl.sim.liveness import liveness_profile
    t0 = time.monotonic()
    rows = [liveness_profile(p, range(seeds), protocol=proto)
            for proto in ("kraft", "elr") for p in DEFAULT_PROFILES]
    ok = all(r["never_recovered"] == 0 and not r["safety_violations"] for r in rows)
    planted = liveness_profile("chaos", range(max(seeds, 3)), bug=ELR_LIVENESS_BUG,
                               protocol="elr")
    flagged = planted["never_recovered"] > 0 and not planted["safety_violations"]
    return {"stage": "liveness", "ok": ok and flagged, "runs": rows,
            "planted": {"bug": ELR_LIVENESS_BUG, "seeds": planted["seeds"],
                        "never_recovered": planted["never_recovered"], "flagged": flagged},
            "seconds": round(time.monotonic() - t0, 1)}


# KIP-642: each planted reassignment bug (refimpl/bugs.py) must be flagged by the simulator's
# online invariants within this many seeds (chaos, 2,000 steps); the demo reports the first.
# The full benchmark (benchmarks/bench_reassign_detection.py) allows 1,000.
REASSIGN_BUG_SEED_LIMIT = 50
REASSIGN_GRAPH = "reassign-graph-grow"
# The draft's availability finding: a growing quorum that can never elect a leader again.
REASSIGN_FINDING = "reassign-finding-observer-vote-deadlock"


def _stage_reassign(out: Path, seeds: int, show: bool, chaos_steps: int = 1500,
                    graph_mode: bool = True) -> dict:
    """KIP-642 reassignment end to end, small: simulate (chaos, unbounded, `chaos_steps` steps
    per trace), metrics, validate a corpus inside reassign-graph-grow's bounds against the spec
    (by lookup in its dumped state graph with `graph_mode`, else in neighbourhood mode under
    that config: a TLC run of the traces' states instead of the graph's 12,918), and the
    planted bugs flagged."""
    from refimpl.bugs import bugs_for
    from refimpl.kraft.reassign_adapter import ReassignAdapter
    from refimpl.sim.corpus import simulate_corpus
    from refimpl.sim.faults import get_profile
    from refimpl.sim.simulator import first_flagged_seed
    from spark_trace_analysis.reassign_metrics import summarize, trace_file_reassignments
    from trace_checker.corpus import validate_corpus
    t0 = time.monotonic()
    chaos, graph = out / "traces" / "reassign-chaos", out / "traces" / "reassign-graph-lossy"
    for d in (chaos, graph, out / "validate" / "reassign-graph-lossy"):
        shutil.rmtree(d, ignore_errors=True)
    m = simulate_corpus(protocol="reassign", seeds=range(seeds), faults="chaos",
                        steps=chaos_steps, out=chaos, show_progress=show)
    violations = sum(len(t.get("invariant_violations", [])) for t in m["traces"])
    g = simulate_corpus(protocol="reassign", seeds=range(seeds), faults="lossy", steps=200,
                        out=graph, bounds=str(REPO_ROOT / "tlc_configs" / f"{REASSIGN_GRAPH}.cfg"),
                        show_progress=show)
    violations += sum(len(t.get("invariant_violations", [])) for t in g["traces"])
    # the metrics over both corpora: under chaos (faults for ever) few reassignments complete
    # within `chaos_steps` steps, the bounded lossy runs complete theirs
    # (docs/refimpl-reassign.md)
    items = [x for d in (chaos, graph) for f in sorted(d.glob("*.jsonl"))
             for x in trace_file_reassignments(f)]
    metrics = summarize(items)
    v = validate_corpus([graph], graph=REASSIGN_GRAPH if graph_mode else None,
                        config=None if graph_mode else REASSIGN_GRAPH,
                        out=out / "validate" / "reassign-graph-lossy", max_out_of_scope=0)
    write_atomic(out / "verdicts" / "reassign-graph-lossy.json",
                 json.dumps(v, indent=2, default=str) + "\n")
    bugs = []
    for planted in bugs_for("reassign"):
        first = first_flagged_seed(lambda b=planted.name: ReassignAdapter(None, b), planted.name,
                                   REASSIGN_BUG_SEED_LIMIT, get_profile("chaos"), 2000)
        bugs.append({"bug": planted.name, "seed": first[0] if first else None,
                     "flagged_by": first[1] if first else None})
    # the draft's availability finding must still be found (docs/spec-reassignment.md §4); its
    # cure runs with the ci profile in the tlc stage
    found = run_entries([e for e in load_manifest() if e.name == REASSIGN_FINDING],
                        show_progress=False, workers=TLC_WORKERS)   # the tlc stage's run
    finding = {"config": REASSIGN_FINDING, "violated": found[0].violated if found else None,
               "depth": found[0].depth if found else None,
               "ok": bool(found) and found[0].as_expected}
    ok = (violations == 0 and metrics["completed"] > 0 and bool(v.get("ok"))
          and all(b["flagged_by"] for b in bugs) and finding["ok"])
    return {"stage": "reassign", "ok": ok, "traces": len(m["traces"]) + len(g["traces"]),
            "finding": finding,
            "invariant_violations": violations, "metrics": metrics,
            "validate": {"config": REASSIGN_GRAPH, "mode": v.get("mode"),
                         "counts": v.get("counts"), "ok": bool(v.get("ok"))},
            "bugs": bugs, "seconds": round(time.monotonic() - t0, 1)}


# The default demo's fail-closed variants are made of the source trace's first 25 steps (the
# edits touch steps 1 to 5): the variants leaving the graph are re-checked in neighbourhood mode,
# a few TLC runs for 25 steps against some twenty for the whole trace (--full).
FAIL_CLOSED_STEPS = 25


def _stage_fail_closed(out: Path, show: bool, steps: int | None = None) -> dict:
    """The checker's verdicts belong to the judge, never to the trace (the fail-closed audit,
    docs/review-fail-closed-2026-11-24.md): every hostile variant (of the source's first
    `steps` steps; None: all) judged as it must be."""
    from trace_checker.selfcheck import pick_source, run_selfcheck
    t0 = time.monotonic()
    corpus = out / "traces" / "kraft-graph-chaos"
    src = pick_source(list(corpus.glob("*.jsonl")))
    if src is None:
        return {"stage": "fail-closed", "ok": False, "cases": 0, "as_expected": 0,
                "problem": f"no trace of {corpus} to make the variants of",
                "seconds": round(time.monotonic() - t0, 1)}
    s = run_selfcheck(src, out / "fail-closed", graph=GRAPH_CONFIGS["kraft"], steps=steps)
    if show:
        for r in s["rows"]:
            if not r["as_expected"]:
                console.print(f"fail-closed {r['case']}: expected {r['expected']}, got "
                              f"{r['got']}")
    return {"stage": "fail-closed", "ok": s["ok"], "cases": s["cases"],
            "as_expected": s["as_expected"], "source": s["source"], "source_steps": steps,
            "report": str(out / "fail-closed" / "selfcheck.json"), "rows": s["rows"],
            "seconds": round(time.monotonic() - t0, 1)}


# Kafka's own raft client (issue 31, kafka_bridge): name -> (fault profile, bounds config or
# None, steps, judge).  Kafka's traces are judged by KRaft.tla with the switches modelling its
# documented deviations (docs/kafka-conformance.md §1): the bounded corpus in full-graph mode
# (kraft-graph-small's bounds), the other in neighbourhood mode.
KAFKA_CORPORA = {"kafka-kraft-chaos": ("chaos", None, 300, "kraft-ci-kafka-3.7"),
                 "kafka-kraft-graph-chaos": ("chaos", GRAPH_CONFIGS["kraft"], 300,
                                             "kraft-graph-small-kafka-3.7")}
# each planted environment fault must be flagged (an online invariant or the checker) within
# this many seeds of the crashes profile (tests/test_kafka_raft_harness.py PLANT_SEEDS)
KAFKA_PLANT_SEEDS = 5


def _stage_kafka(out: Path, seeds: int, show: bool, graph_mode: bool = True) -> dict:
    """Kafka 3.7's raft client in the harness (`simulate --impl kafka`): a chaos corpus and
    one inside kraft-graph-small's bounds, no invariant violated, every trace valid (the
    bounded corpus in graph mode with `graph_mode`, else, as the other, in neighbourhood mode
    under its judge config; verdicts in out/verdicts/), and each planted environment fault
    flagged within KAFKA_PLANT_SEEDS seeds (the plants no invariant flagged judged together:
    one checker run).  Not ok when the harness cannot run (the cause is in `error`)."""
    from kafka_bridge import RAFT_PLANTS
    from kafka_bridge.raft import KafkaRunSpec, run
    from kafka_bridge.toolchain import HarnessError
    from trace_checker.corpus import validate_corpus
    t0 = time.monotonic()
    runs, plants = [], []
    try:
        for name, (faults, cfg, steps, judge) in KAFKA_CORPORA.items():
            d = out / "traces" / name
            shutil.rmtree(d, ignore_errors=True)
            (out / "verdicts" / f"{name}.json").unlink(missing_ok=True)
            m = run(KafkaRunSpec(seeds=list(range(seeds)), faults=faults, steps=steps,
                                 bounds_path=str(REPO_ROOT / "tlc_configs" / f"{cfg}.cfg")
                                 if cfg else None), d)
            in_graph = bool(cfg) and graph_mode
            v = validate_corpus([d], graph=judge if in_graph else None,
                                config=None if in_graph else judge,
                                out=out / "validate" / name, max_out_of_scope=0)
            write_atomic(out / "verdicts" / f"{name}.json",
                         json.dumps(v, indent=2, default=str) + "\n")
            runs.append({"corpus": name, "faults": faults, "bounds": cfg, "judge": judge,
                         "version": m["impl"]["version"], "traces": len(m["traces"]),
                         "steps": m["summary"]["steps"],
                         "invariant_violations": m["summary"]["traces_with_violations"],
                         "errors": m.get("errors", []), "mode": v.get("mode"),
                         "counts": v.get("counts"), "ok": bool(v.get("ok")) and not m.get(
                             "errors") and m["summary"]["traces_with_violations"] == 0})
        unflagged = {}
        for plant in RAFT_PLANTS:
            d = out / "kafka-plants" / plant
            shutil.rmtree(d, ignore_errors=True)
            m = run(KafkaRunSpec(seeds=list(range(KAFKA_PLANT_SEEDS)), faults="crashes",
                                 steps=300, plant=plant), d)
            by = sorted(m["summary"]["invariants_violated"])
            if not by:
                unflagged[plant] = d
            plants.append({"plant": plant, "seeds": KAFKA_PLANT_SEEDS, "flagged_by": by})
        if unflagged:   # no invariant broke: the checker (Kafka's judge) must reject a trace
            v = validate_corpus(list(unflagged.values()),
                                config=KAFKA_CORPORA["kafka-kraft-chaos"][3],
                                out=out / "validate" / "kafka-plants")
            for p in plants:
                d = unflagged.get(p["plant"])
                if d is not None and any(r["verdict"] == "invalid"
                                         and Path(r["file"]).parent == d
                                         for r in v["results"]):
                    p["flagged_by"] = ["checker"]
    except HarnessError as e:
        return {"stage": "kafka", "ok": False, "error": str(e), "runs": runs, "plants": plants,
                "seconds": round(time.monotonic() - t0, 1)}
    if show:
        for r in runs:
            console.print(f"kafka {r['corpus']}: {r['traces']} traces, {r['counts']}")
    ok = all(r["ok"] for r in runs) and all(p["flagged_by"] for p in plants)
    return {"stage": "kafka", "ok": ok, "runs": runs, "plants": plants,
            "seconds": round(time.monotonic() - t0, 1)}


# Kafka 4.x's KIP-966 controller (issue 32, kafka_bridge/elr.py): judged under the kafka-4.x
# judge config (neighbourhood mode here; full-graph mode in tests and the docs' numbers)
KAFKA_ELR_CONFIG = "elr-kafka-graph-small"


def _stage_kafka_elr(out: Path, seeds: int, show: bool) -> dict:
    """Kafka 4.x's KIP-966 controller driven by the refimpl's brokers (`simulate --impl kafka
    --protocol elr`): a chaos corpus inside elr-kafka-graph-small's bounds, no invariant
    violated, every trace valid under the kafka-4.x judge.  Not ok when the harness cannot
    run (the cause is in `error`)."""
    from kafka_bridge.elr_run import KafkaElrRunSpec, run
    from kafka_bridge.toolchain import HarnessError
    from trace_checker.corpus import validate_corpus
    t0 = time.monotonic()
    name = "kafka-elr-graph-chaos"
    d = out / "traces" / name
    shutil.rmtree(d, ignore_errors=True)
    try:
        m = run(KafkaElrRunSpec(seeds=list(range(seeds)), faults="chaos", steps=200,
                                bounds_path=str(REPO_ROOT / "tlc_configs" /
                                                f"{KAFKA_ELR_CONFIG}.cfg")), d)
    except HarnessError as e:
        return {"stage": "kafka-elr", "ok": False, "error": str(e),
                "seconds": round(time.monotonic() - t0, 1)}
    v = validate_corpus([d], lazy=True, out=out / "validate" / name, max_out_of_scope=0)
    write_atomic(out / "verdicts" / f"{name}.json", json.dumps(v, indent=2, default=str) + "\n")
    ok = bool(v.get("ok")) and not m.get("errors") and \
        m["summary"]["traces_with_violations"] == 0
    return {"stage": "kafka-elr", "ok": ok, "corpus": name, "version": m["impl"]["version"],
            "traces": len(m["traces"]), "steps": m["summary"]["steps"],
            "invariant_violations": m["summary"]["traces_with_violations"],
            "errors": m.get("errors", []), "mode": v.get("mode"), "counts": v.get("counts"),
            "seconds": round(time.monotonic() - t0, 1)}


def _stage_validate(out: Path, show: bool, corpora: list[str] | None = None) -> dict:
    """Every corpus through the trace checker; each summary is kept as the stats stage's
    verdicts (out/verdicts/NAME.json), failing traces and diagnoses under out/validate/NAME."""
    from trace_checker.corpus import validate_corpus
    from trace_checker.verdict import summary_lines
    t0 = time.monotonic()
    runs = []
    for name, _protocol, _faults, cfg, graph_mode in _corpora(corpora):
        graph = cfg if graph_mode else None
        shutil.rmtree(out / "validate" / name, ignore_errors=True)   # this run's failures only
        # fail closed: no trace of the demo may be out of scope (nothing it cannot judge)
        s = validate_corpus([out / "traces" / name], graph=graph, lazy=graph is None,
                            out=out / "validate" / name, max_out_of_scope=0)
        write_atomic(out / "verdicts" / f"{name}.json", json.dumps(s, indent=2, default=str) + "\n")
        if show:
            for line in summary_lines(s, False)[-1:]:
                console.print(f"validate {name} ({'graph ' + graph if graph else 'neighbourhood'}): "
                              f"{line}")
        runs.append({"corpus": name, "mode": s.get("mode"), "ok": bool(s.get("ok")),
                     "counts": s.get("counts"), "steps": s.get("steps"),
                     "steps_judged": s.get("steps_judged"),
                     "seconds": s.get("seconds")})
    return {"stage": "validate", "ok": all(r["ok"] for r in runs), "runs": runs,
            "seconds": round(time.monotonic() - t0, 1)}


def _stage_stats(out: Path, show: bool, corpora: list[str] | None = None) -> dict:
    from spark_trace_analysis.jobs import run_stats
    t0 = time.monotonic()

    def say(msg: str) -> None:
        if show:
            err_console.print(f"[dim]{time.monotonic() - t0:6.1f}s[/dim] stats: {msg}")

    # this run's corpora and verdicts only, named one by one (not Kafka's: the kafka stage
    # judges them under the Kafka 3.7 judges, the distributed validation here uses the KIP graph)
    names = [c[0] for c in _corpora(corpora)]
    s = run_stats([out / "traces" / n for n in names], out / "stats",
                  graph=GRAPH_CONFIGS["kraft"],
                  verdicts=[out / "verdicts" / f"{n}.json" for n in names], progress=say,
                  # the replay stage ran before: its per-edge outcomes color the coverage section
                  replay=[out / "replay"] if (out / "replay" / "replay.json").exists() else None)
    # the distributed validation must agree with the checker on every trace it judges inside
    # the graph (the others left the bounded graph or are of another protocol), and every
    # trace must have a verdict on both sides
    a = s.get("agreement") or {}
    ok = (bool(a) and a.get("agree_in_graph") == a.get("judged_in_graph") > 0
          and a.get("checker_only") == 0 and a.get("spark_only") == 0)
    return {"stage": "stats", "ok": ok, "report": s["report"],
            "tables": str(out / "stats"), "coverage": s.get("coverage"),
            "agreement": s.get("agreement"), "bad_rows": s.get("bad_rows"),
            "seconds": round(time.monotonic() - t0, 1)}


def _stage_proofs(show: bool) -> dict:
    from kraftcheck.commands.prove import run_proofs
    s = run_proofs(progress=False)
    return {"stage": "proofs", "ok": s["ok"], "counts": s["counts"],
            "as_expected": s["as_expected"], "total": s["total"], "seconds": s["seconds"],
            "not_as_expected": [r["name"] for r in s["obligations"] if not r["as_expected"]],
            "obligations": [{k: r[k] for k in ("name", "kind", "status", "expected", "bound",
                                               "seconds", "refutes")}
                            for r in s["obligations"]]}


# The bug config whose counterexample the demo draws: KIP-966's last-replica-standing story.
REVIEW_DIAGRAM = "elr-bug-elr-disabled"


def _stage_review(out: Path, show: bool) -> dict:
    from kraftcore.paths import SPEC_DIR
    from kraftcheck.tlc.diagram import DiagramError, draw_counterexample
    from kraftcore.tlc.manifest import find_entry
    from kraftcore.tlc.runner import run_config
    from kraftcheck.typeset import TypesetError, load_modules, render_html
    t0 = time.monotonic()
    problems = []
    try:
        pages = render_html(load_modules(SPEC_DIR), out / "spec")
    except (OSError, TypesetError) as e:
        pages, problems = [], problems + [f"typeset: {e}"]
    # the tlc stage's run, if any (the same workers: the same result-cache key)
    r = run_config(find_entry(REVIEW_DIAGRAM), workers=TLC_WORKERS, cache=True)
    diagram = out / "diagrams" / f"{REVIEW_DIAGRAM}.svg"
    try:
        draw_counterexample(r.to_json(), diagram)
    except DiagramError as e:
        diagram, problems = None, problems + [f"diagram: {e}"]
    if show:
        console.print(f"review: {len(pages)} spec pages in {out / 'spec'}; "
                      f"diagram of {REVIEW_DIAGRAM} ({r.violated}): {diagram}")
    return {"stage": "review", "ok": r.as_expected and not problems, "problems": problems,
            "spec_html": str(out / "spec" / "index.html") if pages else None,
            "diagram": str(diagram) if diagram else None,
            "seconds": round(time.monotonic() - t0, 1)}


REPLAY_GRAPH, REPLAY_SEED = "kraft-graph-small", 0


def _stage_replay(out: Path, show: bool, edges: str) -> dict:
    """Model-guided replay (docs/replay.md): a seeded sample of kraft-graph-small's edges
    driven on the refimpl; ok when none diverged and at least 90 % replayed."""
    from trace_checker.replay.run import ReplayError, run_replay
    t0 = time.monotonic()
    try:
        rep = run_replay(REPLAY_GRAPH, "refimpl", edges, seed=REPLAY_SEED,
                         out=out / "replay").report
    except ReplayError as e:
        return {"stage": "replay", "ok": False, "error": str(e),
                "seconds": round(time.monotonic() - t0, 1)}
    if show:
        console.print(f"replay: {rep['replayed']}/{rep['edges']} edges replayed")
    return {"stage": "replay", "ok": rep["diverged"] == 0 and rep["replayed_fraction"] >= 0.9,
            "graph": REPLAY_GRAPH, "edges": rep["edges"], "replayed": rep["replayed"],
            "diverged": rep["diverged"], "not_drivable": rep["not_drivable"],
            "report": str(out / "replay" / "replay.json"),
            "seconds": round(time.monotonic() - t0, 1)}


@dataclass(frozen=True)
class Stage:
    """One stage of the demo: `run(out, show, **params)` returns its summary (with "stage",
    "ok", "seconds"); `default` are the parameters of `kraftcheck demo` (every stage on a small,
    documented subset: a few minutes), `full` those of `kraftcheck demo --full` (CI's job).
    --seeds, --only and --profile override the parameter of that name where a stage has one."""

    name: str
    run: Callable[..., dict]
    default: dict = field(default_factory=dict)
    full: dict = field(default_factory=dict)


STAGES = [
    # TLC: the manifests' `demo` selection, or the whole ci profile
    Stage("tlc", lambda out, show, profile, only, graphs, prefetch: _stage_tlc(
        profile, only, show, graphs, prefetch),
          {"profile": "demo", "only": None, "graphs": DEMO_GRAPHS,
           "prefetch": (REASSIGN_FINDING,)},
          {"profile": "ci", "only": None, "graphs": FULL_GRAPHS,
           "prefetch": (REASSIGN_FINDING,)}),
    Stage("simulate", lambda out, show, seeds, corpora: _stage_simulate(out, seeds, show,
                                                                         corpora),
          {"seeds": 5, "corpora": DEFAULT_CORPORA}, {"seeds": 10, "corpora": None}),
    Stage("validate", lambda out, show, corpora: _stage_validate(out, show, corpora),
          {"corpora": DEFAULT_CORPORA}, {"corpora": None}),
    Stage("kafka-elr", lambda out, show, seeds: _stage_kafka_elr(out, seeds, show),
          {"seeds": 5}, {"seeds": 10}),
    Stage("kafka", lambda out, show, seeds, graph_mode: _stage_kafka(out, seeds, show,
                                                                     graph_mode),
          {"seeds": 5, "graph_mode": False}, {"seeds": 10, "graph_mode": True}),
    Stage("replay", lambda out, show, edges: _stage_replay(out, show, edges),
          {"edges": "sample 200"}, {"edges": "sample 1000"}),
    Stage("stats", lambda out, show, corpora: _stage_stats(out, show, corpora),
          {"corpora": DEFAULT_CORPORA}, {"corpora": None}),
    Stage("proofs", lambda out, show: _stage_proofs(show)),
    Stage("review", lambda out, show: _stage_review(out, show)),
    Stage("liveness", lambda out, show, seeds: _stage_liveness(seeds, show),
          {"seeds": 5}, {"seeds": 10}),
    Stage("reassign", lambda out, show, seeds, chaos_steps, graph_mode: _stage_reassign(
        out, seeds, show, chaos_steps, graph_mode),
          {"seeds": 3, "chaos_steps": 600, "graph_mode": False},
          {"seeds": 5, "chaos_steps": 1500, "graph_mode": True}),
    Stage("fail-closed", lambda out, show, steps: _stage_fail_closed(out, show, steps),
          {"steps": FAIL_CLOSED_STEPS}, {"steps": None}),
]


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of its children waited for so far
    (TLC, the Kafka harness, worker processes): each stage's `cpu_seconds` in the summary,
    which, unlike its wall-clock `seconds`, does not grow when the machine is busy."""
    import resource
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def stage_params(stage: Stage, full: bool, **overrides) -> dict:
    """The stage's parameters: default or full, with the given overrides (None: none)."""
    params = dict(stage.full if full else stage.default)
    params.update({k: v for k, v in overrides.items() if k in params and v is not None})
    return params


def demo(out: Path = typer.Option(REPO_ROOT / "out" / "demo", help="Where outputs go."),
         full: bool = typer.Option(False, "--full", help="CI's job: the whole ci TLC profile and "
                                                         "the full corpora (`make ci`)."),
         profile: str = typer.Option(None, help="TLC profile to run (default: the demo "
                                                "selection; ci with --full)."),
         only: str = typer.Option(None, help="Only TLC configs whose name matches this regex."),
         seeds: int = typer.Option(None, help="Simulated traces per corpus (default 5; 10 with "
                                              "--full)."),
         stage: list[str] = typer.Option(None, "--stage", help="Run only this stage (repeat "
                                         "for more; a later stage reads the earlier stages' "
                                         "outputs in --out, e.g. validate simulate's traces)."),
         as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON.")) -> None:
    """Run the whole pipeline on the embedded defaults and print a summary.

    By default every stage runs on a small documented subset (a few minutes: STAGES);
    --full runs CI's job (the whole ci TLC profile, the full corpora)."""
    try:
        toolchain()
    except (ToolchainError, ManifestError) as e:
        if as_json:
            print_json({"error": str(e)})
        else:
            err_console.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    unknown = set(stage or ()) - {s.name for s in STAGES}
    if unknown:
        err_console.print(f"[red]error:[/] no demo stage named {', '.join(sorted(unknown))} "
                          f"(stages: {', '.join(s.name for s in STAGES)})")
        raise typer.Exit(2)
    show = not as_json
    t0, c0 = time.monotonic(), cpu_seconds()
    stages = []
    for st in STAGES:
        if stage and st.name not in stage:
            continue
        params = stage_params(st, full, seeds=seeds, only=only, profile=profile)
        c1 = cpu_seconds()
        stages.append(st.run(out, show, **params)
                      | {"params": params, "cpu_seconds": round(cpu_seconds() - c1, 1)})
    summary = {"ok": all(s["ok"] for s in stages), "out": str(out), "full": full,
               "seconds": round(time.monotonic() - t0, 1),
               "cpu_seconds": round(cpu_seconds() - c0, 1), "stages": stages}
    write_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    if as_json:
        print_json(summary)
    else:
        for s in stages:
            mark = "[green]ok[/]" if s["ok"] else "[red]NOT OK[/]"
            if s["stage"] == "tlc":
                console.print(f"tlc ({s['profile']}): {s['as_expected']}/{s['configs']} configs as "
                              f"expected in {s['seconds']}s  {mark}")
            elif s["stage"] == "simulate":
                for r in s["runs"]:
                    console.print(f"simulate {r['corpus']}: {r['traces']} traces, "
                                  f"{r['steps']} steps, {r['invariant_violations']} invariant "
                                  f"violations -> {r['dir']}")
                console.print(f"simulate: {s['seconds']}s  {mark}")
            elif s["stage"] == "validate":
                for r in s["runs"]:
                    counts = ", ".join(f"{v} {k}" for k, v in (r["counts"] or {}).items())
                    console.print(f"validate {r['corpus']} ({r['mode']}): {counts}")
                console.print(f"validate: {s['seconds']}s  {mark}")
            elif s["stage"] == "kafka":
                for r in s["runs"]:
                    counts = ", ".join(f"{v} {k}" for k, v in (r["counts"] or {}).items())
                    console.print(f"kafka {r['corpus']} (Kafka {r['version']}): {r['traces']} "
                                  f"traces, {r['steps']} steps, {r['invariant_violations']} "
                                  f"invariant violations; validate under {r['judge']} "
                                  f"({r['mode']}): {counts}")
                for p in s["plants"]:
                    console.print(f"kafka planted {p['plant']}: " + (
                        f"flagged by {', '.join(p['flagged_by'])}" if p["flagged_by"]
                        else f"NOT flagged in {p['seeds']} seeds"))
                if s.get("error"):
                    console.print(f"kafka: [red]{s['error']}[/]")
                console.print(f"kafka: {s['seconds']}s  {mark}")
            elif s["stage"] == "kafka-elr":
                if s.get("error"):
                    console.print(f"kafka-elr: [red]{s['error']}[/]")
                else:
                    counts = ", ".join(f"{v} {k}" for k, v in (s["counts"] or {}).items())
                    console.print(f"kafka-elr {s['corpus']} (Kafka {s['version']}): "
                                  f"{s['traces']} traces, {s['steps']} steps, "
                                  f"{s['invariant_violations']} invariant violations; "
                                  f"validate ({s['mode']}, {KAFKA_ELR_CONFIG}): {counts}")
                console.print(f"kafka-elr: {s['seconds']}s  {mark}")
            elif s["stage"] == "stats":
                a, c = s.get("agreement") or {}, s.get("coverage") or {}
                console.print(f"stats: distributed validation against {GRAPH_CONFIGS['kraft']} "
                              f"agrees with the checker on {a.get('agree_in_graph')}/"
                              f"{a.get('judged_in_graph')} traces judged inside the graph; "
                              f"coverage {c.get('states_visited')}/{c.get('states')} states, "
                              f"{c.get('edges_visited')}/{c.get('edges')} edges, "
                              f"{c.get('actions_visited')}/{c.get('actions')} actions")
                console.print(f"stats: {s['seconds']}s  {mark}  report: {s['report']}")
            elif s["stage"] == "proofs":
                c = s["counts"]
                console.print(f"proofs: {s['as_expected']}/{s['total']} z3 obligations as "
                              f"expected ({c.get('proved', 0)} proved, "
                              f"{c.get('counterexample', 0)} counterexamples for planted "
                              f"variants and findings) in {s['seconds']}s  {mark}"
                              + (f"  not as expected: {', '.join(s['not_as_expected'])}"
                                 if s["not_as_expected"] else ""))
            elif s["stage"] == "review":
                console.print(f"review: spec {s['spec_html']}, diagram {s['diagram']}: "
                              f"{s['seconds']}s  {mark}")
            elif s["stage"] == "liveness":
                for r in s["runs"]:
                    rec = r["recovery_ms"]
                    off = (f", {r['offline_by_design']} offline by design"
                           if "offline_by_design" in r else "")
                    console.print(f"liveness {r['protocol']} {r['profile']}: {r['seeds']} runs, "
                                  f"recovery after the faults p50 {rec['p50']} / max "
                                  f"{rec['max']} ms, {r['never_recovered']} never recovered{off}")
                pl = s["planted"]
                console.print(f"liveness elr planted bug {pl['bug']}: {pl['never_recovered']} of "
                              f"{pl['seeds']} chaos runs never recovered "
                              f"({'flagged' if pl['flagged'] else 'NOT flagged'})")
                console.print(f"liveness: {s['seconds']}s  {mark}")
            elif s["stage"] == "reassign":
                mt, vd = s["metrics"], s["validate"]
                console.print(f"reassign: {s['traces']} traces, {s['invariant_violations']} "
                              f"invariant violations; {mt['completed']}/{mt['reassignments']} "
                              f"reassignments completed, time to complete p50 "
                              f"{mt['time_to_complete_ms_p50']} ms, epochs per reassignment "
                              f"{mt['epochs_per_reassignment_mean']}; validate {vd['config']} "
                              f"({vd['mode']}): {vd['counts']}")
                console.print("reassign: planted bugs flagged: " + ", ".join(
                    f"{b['bug']} at seed {b['seed']} by {b['flagged_by']}"
                    if b["flagged_by"] else f"{b['bug']} NOT flagged in "
                    f"{REASSIGN_BUG_SEED_LIMIT} seeds" for b in s["bugs"]))
                fd = s["finding"]
                console.print(f"reassign: finding {fd['config']}: "
                              + (f"{fd['violated']} violated at depth {fd['depth']} (found)"
                                 if fd["ok"] else "NOT found as the manifest expects"))
                console.print(f"reassign: {s['seconds']}s  {mark}")
            elif s["stage"] == "fail-closed":
                console.print(f"fail-closed: {s['as_expected']}/{s['cases']} hostile variants "
                              f"of one trace judged as they must be (liveness judge not "
                              f"weakened by the header, format rules, values TLC cannot hold, "
                              f"steps of no spec action) in {s['seconds']}s  {mark}"
                              + (f"  report: {s['report']}" if s.get("report") else ""))
            elif s["stage"] == "replay":
                what = s.get("error") or (f"{s['replayed']}/{s['edges']} edges replayed, "
                                          f"{s['diverged']} diverged")
                console.print(f"replay {REPLAY_GRAPH} (refimpl, seeded sample): {what} in "
                              f"{s['seconds']}s  {mark}")
        console.print(f"summary: {out / 'summary.json'} ({'full' if full else 'default'} "
                      f"demo, {summary['seconds']}s, {summary['cpu_seconds']} CPU s)")
    raise typer.Exit(0 if summary["ok"] else 1)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
