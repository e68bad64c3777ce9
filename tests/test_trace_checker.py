"""The trace checker's machinery without TLC: dump parsing, index, cache format, stepping,
partial observation, diagnoses, and the hand-written fixture traces against a stored dump of
the Ticket fixture spec (tests/fixtures/traces/ticket-graph.dot)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tla_values import parse_value
from kraftcore.values import Fn, fingerprint, make_fn
from trace_checker import corpus
from trace_checker.codec import Codec
from trace_checker.diagnose import value_diff
from trace_checker.dot import DotFormatError, read_dump, split_label, unescape_label
from trace_checker.graph import GraphFormatError, StateGraph
from trace_checker.observe import Observer
from trace_checker.partial import TraceRun
from trace_checker.tlagen import ModelValues, Unwritable, value_size
from trace_checker.traces import read_trace

FIX = REPO_ROOT / "tests/fixtures/traces"


@pytest.fixture(scope="module")
def ticket_graph() -> StateGraph:
    return StateGraph.from_dump(read_dump(FIX / "ticket-graph.dot"), source="ticket-graph.dot")


def check(path: Path, g: StateGraph) -> dict:
    corpus._set_graph(g)
    return corpus._check_in_graph(str(path))


# --------------------------------------------------------------------------- dot dumps

def test_dump_lines_and_escapes(tmp_path):
    p = tmp_path / "g.dot"
    p.write_text(
        'strict digraph DiskGraph {\nnodesep=0.35;\nsubgraph cluster_graph {\ncolor="white";\n'
        '-5 [label="/\\\\ s = \\"a\\\\\\"b\\\\\\\\c\\"\\n/\\\\ x = 0",style = filled]\n'
        '-5 -> 7 [label="Up",color="black",fontcolor="black"];\n'
        '7 [label="/\\\\ s = \\"|->\\"\\n/\\\\ x = 1"];\n'
        '7 -> 7 [label="Stay",color="black",fontcolor="black"];\n'
        '{rank = same; -5;}\n}\n}\n')
    d = read_dump(p)
    assert d.initial == [-5] and d.edges == [(-5, 7, "Up"), (7, 7, "Stay")]
    assert split_label(d.labels[-5]) == [("s", '"a\\"b\\\\c"'), ("x", "0")]
    assert parse_value(split_label(d.labels[-5])[0][1]) == 'a"b\\c'
    g = StateGraph.from_dump(d)
    assert g.state(g.initial[0]) == {"s": 'a"b\\c', "x": 0}
    assert g.successors(1) == [("Stay", 1)]        # self-loops are transitions too
    # the fast path keeps labels escaped and unescapes only distinct value texts
    e = StateGraph.from_dump(read_dump(p, unescape=False))
    assert [e.state(i) for i in range(len(e))] == [g.state(i) for i in range(len(g))]
    assert e.succ == g.succ


def test_dump_garbage_line_is_named(tmp_path):
    p = tmp_path / "g.dot"
    p.write_text('strict digraph D {\n12 [label="/\\\\ x = 1"]\n12 -> oops\n')
    with pytest.raises(DotFormatError, match=r"g.dot:3"):
        read_dump(p)


def test_unparsable_value_in_dump_is_a_graph_error(tmp_path):
    p = tmp_path / "g.dot"
    p.write_text('1 [label="/\\\\ x = {1,,}",style = filled]\n')
    with pytest.raises(GraphFormatError):
        StateGraph.from_dump(read_dump(p))


def test_multiline_values_and_single_variable_labels():
    label = unescape_label('/\\\\ a = [x |-> 1,\\n     y |-> 2]\\n/\\\\ b = 3')
    assert split_label(label) == [("a", "[x |-> 1,\n     y |-> 2]"), ("b", "3")]
    assert split_label("x = <<1, 2>>") == [("x", "<<1, 2>>")]


# --------------------------------------------------------------------------- index

def test_escaped_and_unescaped_reading_agree(ticket_graph):
    e = StateGraph.from_dump(read_dump(FIX / "ticket-graph.dot", unescape=False))
    assert e.states == ticket_graph.states and e.succ == ticket_graph.succ
    assert e.codec.texts == ticket_graph.codec.texts


def test_graph_index_round_trips_through_the_cache_format(ticket_graph):
    g = ticket_graph
    assert len(g) == 105 and g.edge_count == 262     # TLC: 105 distinct states
    h = StateGraph.from_bytes(g.to_bytes())
    assert h.states == g.states and h.initial == g.initial
    assert [list(x) for x in h.succ] == g.succ           # loaded successor lists are tuples
    assert h.state(5) == g.state(5) and h.fingerprint(5) == fingerprint(make_fn(g.state(5)))
    with pytest.raises(GraphFormatError):
        StateGraph.from_bytes(b"not a graph")


def test_equal_values_printed_differently_share_an_id():
    c = Codec(["f"])
    a = c.intern(0, __import__("kraftcore.values", fromlist=["canonical_json"]).canonical_json(
        parse_value("(1 :> 5 @@ 2 :> 6)")))
    b = c.intern_value("f", parse_value("<<5, 6>>"))
    assert a == b


def test_networkx_view_and_shortest_path(ticket_graph):
    g = ticket_graph
    nxg = g.to_networkx()
    assert nxg.number_of_nodes() == len(g)
    far = max(range(len(g)), key=lambda s: len(g.shortest_path(s) or []))
    path = g.shortest_path(far)
    assert path[0][0] == "Init" and path[-1][1] == far
    for (_, a), (act, b) in zip(path, path[1:]):
        assert (act, b) in g.successors(a)


# --------------------------------------------------------------------------- fixtures

EXPECTED = {
    "valid-request-grant": ("valid", None),
    "invalid-double-grant": ("recheck", 4),          # leaves the graph: judged with TLC
    "invalid-wrong-action": ("recheck", 2),
    "valid-beyond-bounds": ("recheck", 3),           # MaxTicket = 2 in the graph
    "partial-valid-holder": ("valid", None),
    "partial-invalid-holder": ("recheck", 4),
    "valid-stutter": ("valid", None),                # a step that changes nothing
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_traces_in_the_graph(name, ticket_graph):
    r = check(FIX / f"{name}.jsonl", ticket_graph)
    verdict, step = EXPECTED[name]
    assert r["verdict"] == verdict
    assert r.get("left_graph_at_step") == step


def test_partial_observation_tracks_candidates(ticket_graph):
    r = check(FIX / "partial-valid-holder.jsonl", ticket_graph)
    assert r["partial"] and r["ambiguity"]["max_candidates"] > 1


@pytest.mark.parametrize("name,line,field", [
    ("malformed-truncated", 4, None),
    ("malformed-unknown-variable", 3, "state.leader"),
    ("malformed-out-of-order", 3, "step"),
])
def test_malformed_fixtures_name_the_place(name, line, field, ticket_graph):
    r = check(FIX / f"{name}.jsonl", ticket_graph)
    assert r["verdict"] == "malformed"
    assert (r["malformed"]["line"], r["malformed"]["field"]) == (line, field)
    assert r["malformed"]["file"].endswith(f"{name}.jsonl")


def test_claimed_action_must_label_the_edge(ticket_graph):
    t = read_trace(FIX / "invalid-wrong-action.jsonl")
    keys = Observer(ticket_graph.codec, intern=False).keys(t)
    run = TraceRun(t, keys, ticket_graph)
    assert run.advance() == ("fail", 2)
    from trace_checker.diagnose import diagnose
    d = diagnose(t, keys, 2, run.candidates, ticket_graph)
    assert d["actions_reaching_observed_state"] == ["Request"] and d["claimed_action"] == "Release"
    assert d["nearest"]["differing_variables"] == []


def test_diagnosis_names_variables_and_paths(ticket_graph):
    t = read_trace(FIX / "invalid-double-grant.jsonl")
    keys = Observer(ticket_graph.codec, intern=False).keys(t)
    run = TraceRun(t, keys, ticket_graph)
    outcome, k = run.advance()
    from trace_checker.diagnose import diagnose
    d = diagnose(t, keys, k, run.candidates, ticket_graph)
    assert d["enabled_actions"] == ["Release", "Request", "Tick"]
    assert not d["claimed_action_enabled"]
    assert "holder" in d["nearest"]["differing_variables"]
    assert d["line"] == 6 and d["event"]["action"] == "GrantSome"


def test_value_diff_paths():
    e = Fn({"n1": (1, 2), "n2": frozenset({1})})
    o = Fn({"n1": (1, 3), "n2": frozenset({2})})
    assert value_diff(e, o, model_values={"n1", "n2"}) == [
        {"path": "[n1][2]", "expected": 2, "observed": 3, "expected_tla": "2",
         "observed_tla": "3"},
        {"path": "[n2]", "missing": [1], "unexpected": [2], "missing_tla": ["1"],
         "unexpected_tla": ["2"]}]
    # a string that is not a model value is a TLA+ string in the path
    assert value_diff(e, o)[0]["path"] == '["n1"][2]'


def test_value_diff_paths_are_tla_syntax_not_python_reprs():
    """A diagnosis names a bag's message by its TLA+ record and a replica by its id, never by
    a Python repr (issue 10, item 5)."""
    fetch = Fn({"type": "Fetch", "from": "n1", "epoch": 2})
    e = Fn({"msgs": Fn({fetch: 1}), "highWatermark": Fn({"n1": 0, "n2": 0})})
    o = Fn({"msgs": Fn({fetch: 2}), "highWatermark": Fn({"n1": 1, "n2": 0})})
    mv = {"n1", "n2"}
    paths = [dict(p, path=var + p["path"]) for var in ("highWatermark", "msgs")
             for p in value_diff(e[var], o[var], model_values=mv)]
    assert [p["path"] for p in paths] == [
        "highWatermark[n1]", 'msgs[[epoch |-> 2, from |-> n1, type |-> "Fetch"]]']
    assert paths[0]["expected_tla"] == "0" and paths[0]["observed_tla"] == "1"
    assert not any("Fn(" in p["path"] or "'" in p["path"] for p in paths)


# --------------------------------------------------------------------------- generated TLA+

def test_trace_strings_are_escaped_and_model_values_renamed():
    mv = ModelValues(["n1", "None"])
    text = mv.tla(Fn({"holder": 'n2" /\\ FALSE \\* ====', "who": "n1"}))
    assert text == '[holder |-> "n2\\" /\\\\ FALSE \\\\* ====", who |-> TC_mv_n1]'
    assert parse_value(text) == Fn({"holder": 'n2" /\\ FALSE \\* ====', "who": "TC_mv_n1"})
    assert mv.declarations() == "CONSTANTS TC_mv_n1\n" and mv.bindings() == ["TC_mv_n1 = n1"]
    with pytest.raises(Unwritable):
        mv.tla(2**40)                        # not a TLC integer
    with pytest.raises(Unwritable):
        ModelValues(["n1 = n2"])              # a model value must be an identifier
    with pytest.raises(Unwritable):
        mv.tla("tab\x00")                     # no TLA+ string can hold it


def test_value_size_covers_lengths_and_ints():
    assert value_size(Fn({"a": (1, 2, 3, 4), "b": frozenset({9})})) == 9
    assert value_size(tuple(range(3))) == 3
    assert value_size(Fn({"m1": 2, "m2": 3})) == 5          # a bag of 5 messages


def test_observed_values_unknown_to_the_graph_match_nothing(ticket_graph):
    t = read_trace(FIX / "valid-beyond-bounds.jsonl")
    keys = Observer(ticket_graph.codec, intern=False).keys(t)
    assert -1 in keys[3]          # ticket n1 = 3 never occurs in the bounded graph


def test_stuttering_steps_are_allowed_and_counted(ticket_graph):
    assert check(FIX / "valid-stutter.jsonl", ticket_graph)["stutters"] == 1
    assert check(FIX / "valid-request-grant.jsonl", ticket_graph)["stutters"] == 0  # Tick is an edge
