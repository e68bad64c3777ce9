"""The z3 proofs (proofs/, `kraftcheck prove`): every obligation comes out as expected --
proved for the rules, a counterexample breaking the named property for each planted variant
and finding -- and the harness cannot pass vacuously or on a wrong expectation."""

from __future__ import annotations

import json

import pytest
import z3
from typer.testing import CliRunner

from kraftcheck.cli import app
from proofs import registry
from proofs.core import COUNTEREXAMPLE, PROVED, UNBOUNDED, UNKNOWN, Obligation, Problem, check

OBLIGATIONS = registry.obligations()


@pytest.mark.parametrize("ob", OBLIGATIONS, ids=[o.name for o in OBLIGATIONS])
def test_obligation_is_as_expected(ob):
    r = check(ob)
    assert r.status == ob.expected, (r.reason, r.counterexample)
    if ob.expected == COUNTEREXAMPLE:
        assert ob.refutes in r.failed, r.failed
        assert isinstance(r.counterexample, dict) and r.counterexample
    else:
        assert r.counterexample is None and not r.failed
    assert r.as_expected


def test_the_catalog_covers_the_issue():
    """Every rule family has proved obligations and planted variants; every proved KIP-966
    controller transition of ELR.tla is covered, and the findings are the documented ones."""
    names = {o.name for o in OBLIGATIONS}
    kinds = {k: [o for o in OBLIGATIONS if o.kind == k] for k in ("rule", "planted", "finding")}
    assert len(kinds["planted"]) >= 20 and all(o.expected == COUNTEREXAMPLE
                                               for o in kinds["planted"])
    assert {o.name for o in kinds["finding"]} == {
        "kip595-finding-diverging-epoch-one-round", "kip966-finding-min-isr-lowered",
        "kip966-finding-elr-election-after-min-isr-lowered",
        "kip966-finding-phase1-last-known-leader",
        "kip966-finding-refimpl-fence-after-min-isr-lowered"}
    assert {"kip966-init-satisfies-invariants", "kip966-refimpl-fence-matches-spec"} <= names
    for t in ("shrink-isr", "commit-isr-expand", "fence-broker", "unfence-broker",
              "restart-clean", "restart-unclean", "change-min-isr", "unclean-election"):
        assert {f"kip966-{t}-preserves-invariants", f"kip966-{t}-step-properties"} <= names
    assert all(o.bound == UNBOUNDED for o in OBLIGATIONS)


def _ob(hyps, goal, expected=PROVED, refutes=None) -> Obligation:
    x = z3.Int("x")
    return Obligation("t", "test", "t", expected, UNBOUNDED,
                      lambda: Problem(hyps(x), [("G", goal(x))], lambda m: {
                          "x": m.eval(x, model_completion=True).as_long()}),
                      spec="-", python="-", refutes=refutes)


def test_contradictory_hypotheses_are_not_a_proof():
    r = check(_ob(lambda x: [x > 1, x < 0], lambda x: x == 7))
    assert r.status == UNKNOWN and "vacuous" in r.reason and not r.as_expected


def test_a_false_goal_gives_a_small_counterexample():
    r = check(_ob(lambda x: [x >= 0], lambda x: x < 1000, COUNTEREXAMPLE, "G"))
    assert r.status == COUNTEREXAMPLE and r.failed == ["G"] and r.as_expected
    assert r.counterexample == {"x": 1000} or r.counterexample["x"] >= 1000


def test_a_counterexample_to_another_property_is_not_as_expected():
    x = z3.Int("x")
    ob = Obligation("t", "test", "t", COUNTEREXAMPLE, UNBOUNDED,
                    lambda: Problem([x >= 0], [("A", x >= 0), ("B", x < 5)],
                                    lambda m: {}), spec="-", python="-", refutes="A")
    r = check(ob)
    assert r.status == COUNTEREXAMPLE and not r.as_expected and "A holds" in r.reason


runner = CliRunner()


def test_cli_json_and_exit_codes():
    res = runner.invoke(app, ["prove", "--only", "kip595-follower-hwm",
                              "--only", "kip595-planted-follower-hwm-uncapped", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["ok"] and out["total"] == 2
    by = {r["name"]: r for r in out["obligations"]}
    for r in by.values():
        assert {"name", "status", "expected", "bound", "seconds", "counterexample"} <= set(r)
    assert by["kip595-follower-hwm"]["status"] == "proved"
    cex = by["kip595-planted-follower-hwm-uncapped"]
    assert cex["status"] == "counterexample" and cex["bound"] == "unbounded"
    assert cex["counterexample"]["new_hwm"] > cex["counterexample"]["log_end"]


def test_cli_unknown_only_name_is_bad_input():
    res = runner.invoke(app, ["prove", "--only", "no-such-obligation", "--json"])
    assert res.exit_code == 2
    assert "no-such-obligation" in json.loads(res.stdout)["error"]


def test_cli_exits_1_when_an_obligation_is_not_as_expected(monkeypatch):
    wrong = [o for o in OBLIGATIONS if o.name == "kip595-planted-follower-hwm-uncapped"][0]
    from dataclasses import replace
    monkeypatch.setattr(registry, "obligations",
                        lambda: [replace(wrong, expected=PROVED, refutes=None)])
    res = runner.invoke(app, ["prove", "--json"])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["ok"] is False


def test_cli_selects_families_and_globs():
    res = runner.invoke(app, ["prove", "--list", "--json", "--only", "kip966-planted-*"])
    assert res.exit_code == 0
    names = [o["name"] for o in json.loads(res.stdout)]
    assert names and all(n.startswith("kip966-planted-") for n in names)
    res = runner.invoke(app, ["prove", "--list", "--json", "--only", "kip595"])
    assert {o["family"] for o in json.loads(res.stdout)} == {"kip595"}


def test_demo_proofs_stage(monkeypatch):
    """The stage reports each obligation and fails unless every one is as expected (the
    obligations themselves are run above; a few stand for all of them here)."""
    from dataclasses import replace

    from kraftcheck.commands.demo import _stage_proofs
    few = [o for o in OBLIGATIONS if o.name in ("kip595-follower-hwm",
                                                "kip595-planted-follower-hwm-uncapped")]
    monkeypatch.setattr(registry, "obligations", lambda: few)
    s = _stage_proofs(False)
    assert s["ok"] and s["stage"] == "proofs" and not s["not_as_expected"]
    assert s["total"] == 2 == s["as_expected"]
    assert s["counts"] == {"proved": 1, "counterexample": 1}
    assert [o["name"] for o in s["obligations"]] == [o.name for o in few]
    monkeypatch.setattr(registry, "obligations",
                        lambda: [few[0], replace(few[1], expected=PROVED, refutes=None)])
    s = _stage_proofs(False)
    assert not s["ok"] and s["not_as_expected"] == ["kip595-planted-follower-hwm-uncapped"]
