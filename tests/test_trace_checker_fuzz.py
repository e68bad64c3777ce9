"""Malformed and adversarial traces never crash the checker and always name the place.

Traces are mutated from a valid fixture (truncated bytes, fields replaced by arbitrary JSON,
lines swapped or dropped, unknown actions, huge integers, strings that would break generated
TLA+) and checked against the stored Ticket graph (no TLC).  The only allowed outcomes are a
verdict, or `malformed` with the file and a line or field."""

from __future__ import annotations

import json

from hypothesis import given, strategies as st

from kraftcore.paths import REPO_ROOT
from kraftcore.tla_values import parse_value
from kraftcore.values import is_identifier, make_fn
from trace_checker import corpus
from trace_checker.dot import read_dump
from trace_checker.graph import StateGraph
from trace_checker.tlagen import ModelValues, Unwritable

FIX = REPO_ROOT / "tests/fixtures/traces"
VALID = (FIX / "valid-request-grant.jsonl").read_text().splitlines()
GRAPH = StateGraph.from_dump(read_dump(FIX / "ticket-graph.dot"))
VERDICTS = {"valid", "recheck", "out_of_scope", "malformed"}

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**80, max_value=2**80),
                      st.floats(allow_nan=False), st.text(max_size=20))
json_any = st.recursive(json_leaf, lambda c: st.one_of(st.lists(c, max_size=4),
                        st.dictionaries(st.text(max_size=6), c, max_size=4)), max_leaves=12)
nasty = st.sampled_from(['" /\\ FALSE', "====", "\\* x", "(* ", "n1 = n2", "\x00", "é", "\n",
                         "#set", "<<", "TC_mv_n1"])


def _run(tmp_path, lines: list[str] | bytes) -> dict:
    p = tmp_path / "t.jsonl"
    p.write_bytes(lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode())
    corpus._set_graph(GRAPH)
    r = corpus._check_in_graph(str(p))
    assert r["verdict"] in VERDICTS
    if r["verdict"] == "malformed":
        m = r["malformed"]
        assert m["file"] == str(p) and (m["line"] is not None or m["field"] is not None)
        assert m["message"]
    return r


@given(cut=st.integers(min_value=0, max_value=len("\n".join(VALID))))
def test_truncation(tmp_path_factory, cut):
    text = ("\n".join(VALID) + "\n").encode()[:cut]
    r = _run(tmp_path_factory.mktemp("t"), text)
    assert r["verdict"] == "malformed" or cut >= len(text)


@given(line=st.integers(min_value=0, max_value=len(VALID) - 1),
       field=st.sampled_from(["kind", "schema", "trace_id", "variables", "model_values", "step",
                              "action", "state", "params", "time_ms", "steps", "bounds"]),
       value=json_any)
def test_field_replaced_by_arbitrary_json(tmp_path_factory, line, field, value):
    lines = list(VALID)
    obj = json.loads(lines[line])
    obj[field] = value
    lines[line] = json.dumps(obj)
    _run(tmp_path_factory.mktemp("t"), lines)


@given(step=st.integers(min_value=1, max_value=len(VALID) - 2),
       var=st.sampled_from(["holder", "msgs", "ticket"]),
       value=st.one_of(json_any, nasty, st.integers(min_value=2**53, max_value=2**200).map(
           lambda n: {"#bigint": str(n)})))
def test_state_values_replaced(tmp_path_factory, step, var, value):
    lines = list(VALID)
    obj = json.loads(lines[step])
    obj["state"][var] = value
    lines[step] = json.dumps(obj)
    r = _run(tmp_path_factory.mktemp("t"), lines)
    assert r["verdict"] != "valid"          # the fixture never holds such a value there


@given(i=st.integers(min_value=1, max_value=len(VALID) - 2),
       j=st.integers(min_value=1, max_value=len(VALID) - 2))
def test_lines_swapped(tmp_path_factory, i, j):
    lines = list(VALID)
    lines[i], lines[j] = lines[j], lines[i]
    r = _run(tmp_path_factory.mktemp("t"), lines)
    assert (r["verdict"] == "valid") == (i == j)
    if i != j:
        assert r["malformed"]["field"] == "step" and r["malformed"]["line"] == min(i, j) + 1


@given(step=st.integers(min_value=1, max_value=len(VALID) - 2),
       action=st.one_of(st.text(max_size=12), st.sampled_from(["Grant", "Init", "Next", "Request "])))
def test_unknown_or_wrong_actions(tmp_path_factory, step, action):
    lines = list(VALID)
    obj = json.loads(lines[step])
    original = obj["action"]
    obj["action"] = action
    lines[step] = json.dumps(obj)
    r = _run(tmp_path_factory.mktemp("t"), lines)
    if r["verdict"] == "malformed":         # not an action name at all
        assert r["malformed"]["field"] == "action"
        # step 0 is Init, and Init is step 0 only
        assert not is_identifier(action) or (step == 1 and action != "Init") or action == "Init"
        return
    prev = json.loads(VALID[step - 1])
    # [Next]_vars allows a stutter claiming an action of Next (a label of the graph here)
    stutter = obj["state"] == prev.get("state") and action in GRAPH.action_ids
    assert (r["verdict"] == "valid") == (action == original or stutter)


@given(value=st.recursive(
    st.one_of(st.integers(min_value=-2**31, max_value=2**31 - 1), st.booleans(),
              st.text(max_size=8), st.sampled_from(["n1", "None"])),
    lambda c: st.one_of(st.lists(c, max_size=3).map(tuple), st.frozensets(c, max_size=3),
                        st.dictionaries(st.text(max_size=5), c, max_size=3).map(make_fn)),
    max_leaves=10))
def test_generated_tla_text_is_exactly_the_value(value):
    """Whatever a trace holds, the TLA+ text written for it parses back to that very value
    (model values renamed) or is refused: nothing can be injected into a generated module."""
    mv = ModelValues(["n1", "None"])
    try:
        text = mv.tla(value)
    except Unwritable:
        return
    assert parse_value(text) == mv._rename(value)


tricky_text = st.one_of(st.text(alphabet='ab,{}[]()<>@:|-" \\', max_size=10), st.text(max_size=6))
values = st.recursive(
    st.one_of(st.integers(min_value=-2**31, max_value=2**31 - 1), st.booleans(), tricky_text,
              st.sampled_from(["n1", "Nil"])),
    lambda c: st.one_of(st.lists(c, max_size=5).map(tuple), st.frozensets(c, max_size=5),
                        st.dictionaries(st.sampled_from(["epoch", "type", "src"]), c,
                                        min_size=1, max_size=3).map(make_fn),
                        st.dictionaries(c, c, max_size=4).map(make_fn)),
    max_leaves=25)


@given(value=values)
def test_memoised_splitting_parser_agrees_with_lark(value):
    """The dump parser cuts large values at top-level separators and parses the parts with
    Lark; it must give exactly what Lark gives for the whole text."""
    from kraftcore.values import ValueError_, to_tla
    from trace_checker.codec import TextParser
    try:
        text = to_tla(value, {"n1", "Nil"})
    except ValueError_:
        return
    assert TextParser().parse(text) == parse_value(text)
