"""The TLC config CONSTANT parser of bounded mode (refimpl/sim/bounds.py)."""

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
    assert {"n1", "n2", "n3", "Nil"} <= b.model_values
    assert b.substitutions == {"Quorum": "QuorumDef"}
    assert "TypeOK" not in c and "Spec" not in c
    assert b.int("MaxEpoch") == 3 and b.int("Missing", 7) == 7
    assert b.first(("MaxTerm", "MaxEpoch")) == ("MaxEpoch", 3)


@pytest.mark.parametrize("text,line,msg", [
    ("CONSTANTS\n  A = {1, 2\n  B = 3\n", 3, "expected ','"),
    ("CONSTANTS\n  A = 1\n  A = 2\n", 3, "assigned twice"),
    ("CONSTANTS\n\n  A = @\n", 3, "unexpected character"),
    ("CONSTANTS\n  A 1\n", 2, "expected '=' or '<-'"),
    ("CONSTANTS\n  A =\n", 2, "unexpected end of file"),
    ("CONSTANTS\n  (* open\n", 1, "unterminated"),
])
def test_errors_name_file_and_line(text, line, msg):
    with pytest.raises(BoundsError) as e:
        parse_cfg_text(text, "bad.cfg")
    s = str(e.value)
    assert msg in s
    assert s.startswith("bad.cfg:" + str(line) if "unterminated" not in msg else "bad.cfg")


def test_type_errors_on_access():
    b = parse_cfg_text("CONSTANTS A = {1}\n", "t.cfg")
    with pytest.raises(BoundsError, match="t.cfg: constant A should be an integer"):
        b.int("A")


def test_missing_file(tmp_path):
    with pytest.raises(BoundsError, match="cannot read"):
        parse_cfg(tmp_path / "nope.cfg")
