"""The demo's corpus: trace ids are unique across its corpora (the stats job keys traces by
id), and each corpus folder holds the current run's traces only."""

from __future__ import annotations

import json

from kraftcheck.commands.demo import CORPORA, _stage_simulate


def test_demo_corpora_have_unique_trace_ids_and_no_stale_files(tmp_path):
    stale = tmp_path / "traces" / CORPORA[0][0] / "stale-0.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}\n")
    s = _stage_simulate(tmp_path, 2, False)
    assert s["ok"] and [r["traces"] for r in s["runs"]] == [2] * len(CORPORA)
    assert not stale.exists()
    ids = []
    for name, protocol, faults, cfg, _graph in CORPORA:
        files = sorted((tmp_path / "traces" / name).glob("*.jsonl"))
        assert len(files) == 2
        for f in files:
            header = json.loads(f.read_text().splitlines()[0])
            assert (header["protocol"], header["fault_profile"]) == (protocol, faults)
            assert header["trace_id"].endswith(f"@{cfg}") if cfg else "@" not in header["trace_id"]
            ids.append(header["trace_id"])
    assert len(ids) == len(set(ids)) == 2 * len(CORPORA)


def test_demo_tlc_selection_has_per_spec_a_config_that_holds_and_a_bug_found():
    """`kraftcheck demo` (default) runs the manifests' `demo` configs: per protocol at least
    one exhaustive ci config with pinned counts and one bug config (tests/test_spec_models.py
    checks each); --full runs the whole ci profile."""
    from kraftcore.tlc.manifest import load_manifest
    entries = load_manifest()
    for protocol in sorted({e.protocol for e in entries}):
        demo = [e for e in entries if e.protocol == protocol and e.demo]
        assert any(e.profile == "ci" and e.mode == "bfs" and e.expect == "ok"
                   and e.distinct_states is not None for e in demo), protocol
        assert any(e.profile == "bugs" and e.expect != "ok" for e in demo), protocol
    assert not [e.name for e in entries if e.demo and e.profile == "deep"]


def test_demo_stages_default_and_full():
    from kraftcheck.commands.demo import STAGES, stage_params
    names = [s.name for s in STAGES]
    assert len(names) == len(set(names))
    assert {"tlc", "simulate", "validate", "stats", "proofs", "review", "liveness", "reassign",
            "fail-closed"} <= set(names)
    tlc = STAGES[names.index("tlc")]
    finding = ("reassign-finding-observer-vote-deadlock",)
    assert stage_params(tlc, False) == {"profile": "demo", "only": None,
                                        "graphs": ("kraft-graph-small",), "prefetch": finding}
    assert stage_params(tlc, True) == {"profile": "ci", "only": None,
                                       "graphs": ("kraft-graph-small", "elr-graph-small"),
                                       "prefetch": finding}
    assert stage_params(tlc, False, profile="bugs", only="x", seeds=3) == {
        "profile": "bugs", "only": "x", "graphs": ("kraft-graph-small",), "prefetch": finding}
    # the default demo's smaller subsets; --full keeps CI's
    reassign = STAGES[names.index("reassign")]
    assert stage_params(reassign, False) == {"seeds": 3, "chaos_steps": 600,
                                             "graph_mode": False}
    assert stage_params(reassign, True) == {"seeds": 5, "chaos_steps": 1500, "graph_mode": True}
    kafka = STAGES[names.index("kafka")]
    assert stage_params(kafka, False) == {"seeds": 5, "graph_mode": False}
    assert stage_params(kafka, True) == {"seeds": 10, "graph_mode": True}
    fail_closed = STAGES[names.index("fail-closed")]
    assert stage_params(fail_closed, False) == {"steps": 25}
    assert stage_params(fail_closed, True) == {"steps": None}
    sim = STAGES[names.index("simulate")]
    assert stage_params(sim, False)["seeds"] < stage_params(sim, True)["seeds"] == 10
    assert stage_params(sim, True, seeds=2) == {"seeds": 2, "corpora": None}   # every corpus
    small = stage_params(sim, False)["corpora"]
    assert small and set(small) < {c[0] for c in CORPORA} and "kraft-graph-chaos" in small
    for name in ("validate", "stats"):   # the corpora simulated are the corpora judged
        assert stage_params(STAGES[names.index(name)], False)["corpora"] == small


def test_demo_graphs_are_those_of_its_graph_corpora():
    """The tlc stage builds the graphs the graph-mode corpora are judged in (and no other)."""
    from kraftcheck.commands.demo import DEFAULT_CORPORA, DEMO_GRAPHS, FULL_GRAPHS
    assert DEMO_GRAPHS == tuple(c[3] for c in CORPORA if c[4] and c[0] in DEFAULT_CORPORA)
    assert FULL_GRAPHS == tuple(c[3] for c in CORPORA if c[4])


def test_fail_closed_variants_of_a_prefix(tmp_path):
    """The default demo's self-check makes its variants of the source's first steps: each
    variant is cut to that prefix, with a footer counting its steps."""
    import pytest
    from kraftcheck.commands.demo import _stage_simulate
    from trace_checker.selfcheck import CASES, MIN_STEPS, pick_source, write_variants
    from trace_checker.traces import TraceMalformed, read_trace
    _stage_simulate(tmp_path, 1, False, ["kraft-graph-chaos"])
    src = pick_source(list((tmp_path / "traces" / "kraft-graph-chaos").glob("*.jsonl")))
    assert src is not None and len(read_trace(src).steps) > 26
    files = write_variants(src, tmp_path / "v", steps=25)
    assert set(files) == {c.name for c in CASES}
    untouched = read_trace(files["untouched"])
    assert len(untouched.steps) == 26 and untouched.footer["steps"] == 25
    assert [s.action for s in untouched.steps] == [s.action for s in read_trace(src).steps[:26]]
    with pytest.raises(TraceMalformed):
        read_trace(files["time-missing"])
    with pytest.raises(ValueError):
        write_variants(src, tmp_path / "w", steps=MIN_STEPS - 1)
