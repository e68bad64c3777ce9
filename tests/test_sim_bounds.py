"""Bounded mode's view of a TLC config (refimpl/sim/bounds.py over kraftcore/tlc/cfg.py)."""

from __future__ import annotations

import pytest

from refimpl.sim.bounds import BoundsError, parse_cfg, parse_cfg_text


def test_values_of_every_kind():
    b = parse_cfg_text("""
(* a (* nested *) comment *)
CONSTANTS
    Server = {n1, n2, n3}   \\* the voters
    MaxEpoch = 3
    Neg = -2
    Flag = TRUE
    Off = FALSE
    Name = "a \\"q\\" b"
    Empty = {}
    Nested = {{1, 2}, {}}
    Tup = <<1, n1, "s">>
    Nil = Nil
    Quorum <- QuorumDef
CONSTANT Single = 1
SPECIFICATION Spec
INVARIANTS TypeOK Safety
""", "x.cfg")
    c = b.constants
    assert c["Server"] == frozenset({"n1", "n2", "n3"})
    assert c["MaxEpoch"] == 3 and c["Neg"] == -2 and c["Single"] == 1
    assert c["Flag"] is True and c["Off"] is False
    assert c["Name"] == 'a "q" b'
    assert c["Empty"] == frozenset() and c["Nested"] == frozenset({frozenset({1, 2}), frozenset()})
    assert c["Tup"] == (1, "n1", "s")
    assert c["Nil"] == "Nil"
    assert b.model_values == {"Nil"}          # `X = X` declares a model value
    assert b.lines["Server"] == 4 and b.lines["Single"] == 15
    assert b.substitutions == {"Quorum": "QuorumDef"}
    assert "TypeOK" not in c and "Spec" not in c
    assert b.int("MaxEpoch") == 3 and b.int("Missing", 7) == 7
    assert b.first(("MaxTerm", "MaxEpoch")) == ("MaxEpoch", 3)


@pytest.mark.parametrize("text,line,msg", [
    ("CONSTANTS\n  A = {1, 2\n  B = 3\n", 2, "constant A: "),
    ("CONSTANTS\n  A = 1\n  A = 2\n", 3, "constant A is assigned twice"),
    ("CONSTANTS\n  S <- X\n  S <- Y\n", 3, "constant S is assigned twice"),
    ("CONSTANTS\n\n  A = @\n", 3, "unexpected text in CONSTANT section: '@'"),
    ("CONSTANTS\n  A 1\n", 2, "expected `Name = value` or `Name <- Op` at 'A'"),
    ("CONSTANTS\n  A =\n", 2, "constant A has no value"),
    ("CONSTANTS\n  A = 1\n  (* open\n", 3, "unterminated (* comment"),
])
def test_errors_name_file_and_line(text, line, msg):
    with pytest.raises(BoundsError) as e:
        parse_cfg_text(text, "bad.cfg")
    s = str(e.value)
    assert s.startswith(f"bad.cfg:{line}: ") and msg in s, s


def test_type_errors_on_access_name_the_line():
    b = parse_cfg_text("CONSTANTS\n  B = 2\n  A = {1}\n", "t.cfg")
    with pytest.raises(BoundsError, match="t.cfg:3: constant A should be an integer"):
        b.int("A")


def test_missing_file(tmp_path):
    with pytest.raises(BoundsError, match="cannot read"):
        parse_cfg(tmp_path / "nope.cfg")
