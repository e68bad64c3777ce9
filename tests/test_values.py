"""Canonical TLA+ values: ITF encoding, TLA+ printing and the Lark value grammar."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftcore.tla_values import TLAValueSyntaxError, parse_state, parse_value
from kraftcore.values import (Fn, ValueError_, canonical, canonical_json, fingerprint, from_itf,
                               make_fn, to_itf, to_tla)

idents = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
strings = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
scalars = st.one_of(st.integers(-10**20, 10**20), st.booleans(), strings)


def _values(children):
    return st.one_of(
        st.frozensets(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(idents, children, min_size=1, max_size=4).map(Fn),
        st.dictionaries(st.integers(-3, 50), children, min_size=1, max_size=4).map(make_fn),
    )


values = st.recursive(scalars, _values, max_leaves=20)


@given(values)
def test_tla_text_round_trips_through_the_grammar(v):
    assert canonical_json(parse_value(to_tla(v))) == canonical_json(v)


@given(values)
def test_itf_round_trips(v):
    text = json.dumps(to_itf(v))
    assert canonical_json(from_itf(json.loads(text))) == canonical_json(v)


def test_sequences_records_and_functions_are_canonical():
    assert parse_value("<<1, 2>>") == parse_value("(1 :> 1 @@ 2 :> 2)") == (1, 2)
    assert parse_value("[a |-> 1]") == parse_value('("a" :> 1)') == Fn({"a": 1})
    assert parse_value("<<>>") == () and parse_value("{}") == frozenset()
    assert parse_value("2..4") == frozenset({2, 3, 4})
    assert parse_value("(n1 :> -1 @@ n2 :> 0)") == Fn({"n1": -1, "n2": 0})
    assert canonical({"x": [1, 2], 3: {True}}) == Fn({"x": (1, 2), 3: frozenset({True})})


def test_string_escapes():
    assert parse_value(r'"a\"b\\c\nd"') == 'a"b\\c\nd'
    assert to_tla('a"b\\c\nd') == r'"a\"b\\c\nd"'


def test_states_parse_into_variable_maps():
    s = parse_state("/\\ x = 0\n/\\ msgs = {[type |-> \"Vote\", epoch |-> 1]}")
    assert s == Fn({"x": 0, "msgs": frozenset({Fn({"type": "Vote", "epoch": 1})})})
    assert parse_state("x = <<TRUE>>") == Fn({"x": (True,)})


def test_fingerprint_distinguishes_bool_from_int():
    assert fingerprint(Fn({"x": True})) != fingerprint(Fn({"x": 1}))
    assert fingerprint(Fn({"x": frozenset({1, 2})})) == fingerprint(Fn({"x": frozenset({2, 1})}))


@pytest.mark.parametrize("text", ["[a |-> ]", "<<1, 2", "{1,, 2}", '"open', "(1 :> )", "1 2",
                                  "[1 |-> 2]", "", "<<>> >>"])
def test_malformed_values_raise_a_located_error(text):
    with pytest.raises(TLAValueSyntaxError) as e:
        parse_value(text, source="out.txt")
    assert "out.txt" in str(e.value)


@given(st.text(max_size=40))
def test_arbitrary_text_never_crashes_the_parser(text):
    try:
        parse_value(text)
    except TLAValueSyntaxError:
        pass


def test_to_tla_refuses_what_tla_cannot_hold():
    with pytest.raises(ValueError_):
        to_tla("bell\x07")
    with pytest.raises(ValueError_):
        to_tla("not an ident", model_values={"not an ident"})
    with pytest.raises(ValueError_):
        to_tla(1.5)  # type: ignore[arg-type]
    # a string that looks like TLA+ stays a string literal
    assert to_tla('"} \\/ TRUE \\* ') == r'"\"} \\/ TRUE \\* "'
    assert to_tla("n1", model_values={"n1"}) == "n1"


@pytest.mark.parametrize("bad", [{"#set": 3}, {"#bigint": "1e5"}, {"#map": [[1]]}, {"#wat": 1},
                                 None, 1.5, {"#tup": {}}])
def test_bad_itf_is_rejected_with_its_place(bad):
    with pytest.raises(ValueError_) as e:
        from_itf({"state": bad}, where="line 3")
    assert "line 3" in str(e.value)


def test_itf_conventions():
    v = Fn({"s": frozenset({1}), "m": Fn({1: "a", 5: "b"}), "q": (1,), "big": 2**60})
    j = to_itf(v)
    assert j == {"big": {"#bigint": str(2**60)}, "m": {"#map": [[1, "a"], [5, "b"]]},
                 "q": [1], "s": {"#set": [1]}}
    assert from_itf({"#tup": [1, 2]}) == (1, 2)
    assert from_itf({"#map": [[2, "b"], [1, "a"]]}) == ("a", "b")
