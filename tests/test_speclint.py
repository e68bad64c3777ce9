"""The spec review checks, on a fixture module and on the project's protocol modules."""

from __future__ import annotations

from pathlib import Path

from kraftcheck.commands.spec import PROTOCOL_MODULES
from kraftcore.paths import SPEC_DIR
from kraftcore.speclint import lint_module, lint_spec_dir

BAD = r"""---- MODULE Bad ----
CONSTANT S
VARIABLE msgs, x
\* KIP-595 §"Vote"
Send(s) == x' = s /\ UNCHANGED msgs
Foo(s) == x' = s /\ UNCHANGED msgs
HandleMsg(m) == msgs' = msgs \ {m} /\ UNCHANGED x
\* KIP-595 §"Fetch"
Recv == \E m \in msgs : HandleMsg(m)
Next == \/ \E s \in S : Send(s) \/ Foo(s)
        \/ \E m \in msgs : HandleMsg(m)
        \/ Recv
        \/ x' = 1 /\ UNCHANGED msgs
Perms == Permutations(S)
====
"""


def test_lint_finds_each_kind_of_issue(tmp_path: Path):
    p = tmp_path / "Bad.tla"
    p.write_text(BAD)
    r = lint_module(p, protocol=True)
    assert r.variables == ["msgs", "x"]
    assert r.actions == ["Send", "Foo", "HandleMsg", "Recv"]
    got = sorted((i.line, i.message.split(";")[0].split(" (")[0]) for i in r.issues)
    assert got == [
        (6, "action Foo cites no KIP section"),
        (7, "action HandleMsg cites no KIP section"),
        (11, "Next has an inline \\E over a set that depends on state variables"),
        (13, "Next has an inline disjunct"),
        (14, "symmetry belongs in the MC module, not the protocol module"),
    ]


def test_project_protocol_modules_pass_the_review_checks():
    reports = lint_spec_dir(SPEC_DIR, PROTOCOL_MODULES)
    assert [r.module for r in reports] == PROTOCOL_MODULES
    for r in reports:
        assert r.variables and r.actions, r.module
        assert not r.issues, "\n".join(map(str, r.issues))
