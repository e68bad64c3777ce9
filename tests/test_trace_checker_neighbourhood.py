"""Neighbourhood mode at scale: shared-value TLA+ text, heap-sized batches, targeted runs,
TLC's out-of-memory as an error, and the schedule-coverage summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kraftcheck.cli import app
from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.runner import TLCResult
from kraftcore.values import Fn
from trace_checker import neighbourhood as N
from trace_checker.corpus import validate_corpus
from trace_checker.coverage import coverage_lines, graph_coverage, next_disjuncts, spec_actions
from trace_checker.fullgraph import resolve_entry
from trace_checker.graph import StateGraph
from trace_checker.codec import Codec
from trace_checker.tlagen import ModelValues, Unwritable
from trace_checker.tlashare import SharedValues

FIX = REPO_ROOT / "tests/fixtures/traces"


# --------------------------------------------------------------------------- shared text

def test_shared_values_write_each_value_once_and_cut_long_sequences():
    sv = SharedValues(ModelValues({"n1", "n2"}), min_len=10, chunk=4)
    log = tuple(Fn({"epoch": 1, "value": f"r{k}"}) for k in range(9))
    a = sv.state([(0, Fn({"n1": log, "n2": log[:5]})), (0, 7)], "s0")
    b = sv.state([(1, Fn({"n1": log[:5], "n2": log})), (0, 7)], "s1")
    assert a != b and sv.uses_concat
    text = sv.text()
    # each record is defined once, and the 4-record pieces are shared by both logs
    assert text.count('value |-> "r0"') == 1
    piece = next(line.split(" == ")[0] for line in text.splitlines()
                 if line.count('value |->') == 0 and line.count("TC_d_") == 5)
    assert sum(line.count(piece) for line in text.splitlines()) >= 3
    assert "TC_mv_n1 :>" in text            # model values through ModelValues
    assert sv.state([(0, Fn({"n1": log, "n2": log[:5]})), (0, 7)], "again") == a


def test_shared_values_escape_strings_and_keep_true_apart_from_1():
    sv = SharedValues(ModelValues(set()), min_len=0)
    t = sv.ref((True, 1, 'x" /\\ FALSE'))
    u = sv.ref((1, 1, 'x" /\\ FALSE'))
    assert t != u
    assert '"x\\" /\\\\ FALSE"' in sv.text()
    with pytest.raises(Unwritable, match="32-bit"):
        sv.ref((2**40,))


def test_batches_follow_the_text_budget():
    entry = resolve_entry("ticket-graph", FIX)
    nb = N.Neighbourhood(entry, ["holder", "msgs", "ticket"], {"n1", "n2", "None"}, 0)
    states = [nb.graph.add_state(nb.graph.codec.encode(
        {"holder": "None", "msgs": frozenset({Fn({"from": "n1", "t": k})}),
         "ticket": Fn({"n1": k, "n2": 0})})) for k in range(40)]
    nb.budget = 10 ** 9
    assert [len(b) for b in nb._batches(states, None)] == [40]
    nb.chunk = 15
    assert [len(b) for b in nb._batches(states, None)] == [15, 15, 10]
    nb.chunk, nb.budget = 4000, 1500
    sizes = [len(b) for b in nb._batches(states, None)]
    assert len(sizes) > 1 and sum(sizes) == 40


def test_heap_size_parsing(monkeypatch):
    monkeypatch.setenv("KRAFTCHECK_TLC_HEAP", "3g")
    assert N.heap_bytes() == 3 * 2**30 and N.text_budget() == 3 * 2**30 // 200
    # not a heap size: sized as the default; the JVM refuses it in its own words and validate
    # exits 2 (tests/test_validate_fail_closed.py)
    monkeypatch.setenv("KRAFTCHECK_TLC_HEAP", "lots")
    assert N.heap_bytes() == 4 * 2**30


def test_tlc_out_of_memory_is_an_error_exit_2(monkeypatch, tmp_path):
    log = tmp_path / "tlc.log"
    log.write_text("Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n")

    def fake_run(entry, **kw):
        return TLCResult(name=entry.name, spec=entry.module, cfg=entry.cfg, profile="ci",
                         mode="bfs", status="error", violated=None, expected="ok",
                         as_expected=False, distinct_states=None, generated_states=None,
                         depth=None, seconds=1.0, log=str(log))
    monkeypatch.setattr(N, "run_config", fake_run)
    with pytest.raises(N.TLCOutOfMemory, match="ran out of memory"):
        validate_corpus([FIX / "valid-request-grant.jsonl"], lazy=True, manifest_dir=FIX)
    r = CliRunner().invoke(app, ["validate", str(FIX / "valid-request-grant.jsonl"), "--lazy",
                                 "--manifest", str(FIX), "--json"])
    assert r.exit_code == 2 and "ran out of memory" in json.loads(r.stdout)["error"]


# --------------------------------------------------------------------------- coverage

def test_spec_actions_follow_next_through_the_module_chain():
    assert spec_actions(resolve_entry("ticket-graph", FIX)) == [
        "Request", "GrantSome", "Release", "Tick"]
    kraft = spec_actions(resolve_entry("kraft-graph-small"))
    # 17 KIP-595 actions + 3 of the Kafka 3.7 switches (never enabled with them off):
    # AdvanceHighWatermarkOnFlush, SendEndQuorumEpoch, ReceiveEndQuorumEpochResponse
    assert kraft[:3] == ["Timeout", "LeaderProgressTimeout", "Resign"] and len(kraft) == 20
    assert spec_actions(resolve_entry("elr-graph-small"))[-1] == "IdleAtBounds"   # MCNext


def test_next_disjuncts_restrict_only_where_each_disjunct_is_one_labelled_action():
    ticket = next_disjuncts(resolve_entry("ticket-graph", FIX))
    assert ticket == [("Request", "\\E n \\in Nodes : Request(n)"), ("GrantSome", "GrantSome"),
                      ("Release", "\\E n \\in Nodes : Release(n)"), ("Tick", "Tick")]
    kraft = next_disjuncts(resolve_entry("kraft-graph-small"))
    assert [a for a, _ in kraft] == spec_actions(resolve_entry("kraft-graph-small"))
    # MCNext == Next \/ IdleAtBounds: a disjunct that is itself a disjunction: whole Next
    assert next_disjuncts(resolve_entry("elr-graph-small")) is None


def test_a_step_judged_for_some_actions_is_known_for_those_only():
    g = StateGraph(Codec(["x"]), complete=False)
    s, t = g.add_state((0,)), g.add_state((1,))
    g.targeted[s] = {t}
    assert g.knows_step(s, t) and g.knows_step(s, t, "Up")      # an unrestricted run: all
    g.step_actions[(s, t)] = frozenset({"Up"})                   # a run restricted to Up
    assert g.knows_step(s, t, "Up")
    assert not g.knows_step(s, t, "Down") and not g.knows_step(s, t)
    g.expanded.add(s)                                            # full successors: all known
    assert g.knows_step(s, t, "Down")


def test_graph_coverage_counts_untaken_and_frontier_edges():
    g = StateGraph(Codec(["x"]), complete=True)
    s = [g.add_state((k,)) for k in range(4)]
    g.initial = [s[0]]
    g.add_edge(s[0], "Up", s[1])
    g.add_edge(s[1], "Up", s[2])
    g.add_edge(s[1], "Jump", s[3])
    g.add_edge(s[2], "Jump", s[3])
    cov = graph_coverage(g, [[s[0], s[1]]], ["Up", "Jump", "Never"])
    assert cov["actions_never_taken"] == ["Jump", "Never"]
    assert cov["edges_never_taken"] == 3 and cov["frontier_edges"] == 2
    assert cov["edges_by_action"] == {"Jump": [2, 0, 1], "Up": [2, 1, 1]}
    assert any("never taken: Jump, Never" in line for line in coverage_lines({"coverage": cov}))


@pytest.mark.tlc
def test_lazy_mode_judges_steps_in_targeted_runs_and_reports_coverage(tlc_toolchain):
    files = [FIX / "valid-request-grant.jsonl", FIX / "invalid-wrong-action.jsonl"]
    s = validate_corpus(files, lazy=True, manifest_dir=FIX)
    by = {Path(r["file"]).stem: r for r in s["results"]}
    assert by["valid-request-grant"]["verdict"] == "valid"
    bad = by["invalid-wrong-action"]
    assert bad["verdict"] == "invalid" and bad["failed_step"] == 2
    # the failing source was expanded fully for the diagnosis: its enabled actions are known
    assert "not by the claimed Release" in bad["diagnosis"]["summary"]
    assert s["neighbourhood"][0]["targeted_sources"] > 0
    # the valid trace's steps only (the invalid one's are not counted)
    assert s["coverage"]["actions_taken"] == {"Request": 2, "GrantSome": 2, "Release": 1,
                                              "Tick": 1}
    assert s["coverage"]["actions_never_taken"] == []
