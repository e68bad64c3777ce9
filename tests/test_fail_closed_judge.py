"""The trace checker's verdict belongs to the judge the user chose, never to the trace, and one
trace never changes another's verdict (docs/review-fail-closed-2026-11-24.md, F1-F4, F7, F11,
F12).  Real simulator traces bounded by kraft-graph-small, edited the way the audit did."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.manifest import load_manifest
from refimpl.sim.runner import RunSpec, run_seeds
from trace_checker.corpus import may_judge, validate_corpus
from trace_checker.tlagen import ModelValues
from trace_checker.tlashare import SharedValues
from trace_checker.traces import TraceMalformed, read_trace

BOUNDS = str(REPO_ROOT / "tlc_configs/kraft-graph-small.cfg")
tlc = [pytest.mark.tlc]


@pytest.fixture(scope="module")
def sim(tmp_path_factory) -> dict[int, tuple[dict, list[dict], dict]]:
    d = tmp_path_factory.mktemp("sim")
    run_seeds(RunSpec("kraft", [0, 1, 2], "chaos", 60, BOUNDS), d)
    out = {}
    for p in sorted(d.glob("*.jsonl")):
        lines = [json.loads(x) for x in p.read_text().splitlines()]
        out[lines[0]["seed"]] = (lines[0], lines[1:-1], lines[-1])
    return out


def _write(path: Path, header: dict, steps: list[dict], footer: dict, tid: str | None = None
           ) -> Path:
    header, steps, footer = copy.deepcopy(header), copy.deepcopy(steps), dict(footer)
    if tid is not None:
        for o in (header, *steps, footer):
            o["trace_id"] = tid
    footer["steps"] = len(steps) - 1
    path.write_text("".join(json.dumps(o) + "\n" for o in (header, *steps, footer)))
    return path


def _late(steps: list[dict]) -> list[dict]:
    """Every step after Init 10 s later: n1 acts long after its election timer was due."""
    st = copy.deepcopy(steps)
    for s in st[1:]:
        s["time_ms"] += 10_000
    return st


def _verdict(summary: dict, name: str) -> dict:
    return next(r for r in summary["results"] if Path(r["file"]).name == name)


# --------------------------------------------------------------------------- F1: liveness

@pytest.mark.tlc
def test_the_header_cannot_switch_the_liveness_judge_off(sim, tmp_path, tlc_toolchain):
    h, steps, f = sim[0]
    late = _late(steps)
    d = tmp_path / "c"
    d.mkdir()
    _write(d / "late.jsonl", h, late, f)
    h1 = copy.deepcopy(h)
    h1["bounds"]["constants"]["MaxEpoch"] = 0
    _write(d / "maxepoch0.jsonl", h1, late, f)
    h2 = copy.deepcopy(h)
    h2["bounds"] = {"constants": {"TimeoutVoters": []}}
    _write(d / "no-timeout-voters.jsonl", h2, late, f)
    as_map = copy.deepcopy(late)
    for s in as_map:
        s["state"]["role"] = {"#map": [[k, v] for k, v in sorted(s["state"]["role"].items())]}
    _write(d / "role-as-map.jsonl", h, as_map, f)
    h3 = copy.deepcopy(h)
    h3["spec_module"] = "ELR"
    _write(d / "spec-module-elr.jsonl", h3, late, f)
    s = validate_corpus([d], graph="kraft-graph-small")
    for name in ("late.jsonl", "maxepoch0.jsonl", "no-timeout-voters.jsonl",
                 "role-as-map.jsonl"):
        r = _verdict(s, name)
        assert r["verdict"] == "invalid", (name, r)
        assert r["diagnosis"]["kind"] == "liveness"
        assert "n1's election-timeout never fired" in r["diagnosis"]["summary"]
        assert r["liveness_judged_by"] == "kraft-graph-small"
    r = _verdict(s, "spec-module-elr.jsonl")
    assert r["verdict"] == "malformed" and r["malformed"]["field"] == "spec_module"
    assert "not the module of config kraft-graph-small" in r["malformed"]["message"]
    assert not s["ok"]


def test_virtual_time_is_required_and_never_goes_backwards(sim, tmp_path):
    h, steps, f = sim[0]
    for edit, field_, why in [(lambda s: s[4].pop("time_ms"), "time_ms", "missing"),
                              (lambda s: s[4].__setitem__("time_ms", None), "time_ms", "expected int"),
                              (lambda s: s[4].__setitem__("time_ms", "5"), "time_ms", "expected int"),
                              (lambda s: s[4].__setitem__("time_ms", -100), "time_ms", "negative"),
                              (lambda s: s[5].__setitem__("time_ms", s[4]["time_ms"] - 1),
                               "time_ms", "backwards")]:
        st = copy.deepcopy(steps)
        edit(st)
        p = _write(tmp_path / "t.jsonl", h, st, f)
        with pytest.raises(TraceMalformed) as e:
            read_trace(p)
        assert e.value.field == field_ and why in e.value.message
        assert e.value.line in (6, 7)


# --------------------------------------------------------------------------- F12: format

def test_the_footer_must_prove_the_trace_complete(sim, tmp_path):
    h, steps, f = sim[0]
    good = _write(tmp_path / "good.jsonl", h, steps, f)
    lines = good.read_text().splitlines()
    n = len(lines)
    for footer, field_ in [({k: v for k, v in f.items() if k != "steps"}, "steps"),
                           ({**f, "steps": "many"}, "steps"),
                           ({**f, "steps": len(steps) - 1, "trace_id": "another"}, "trace_id")]:
        (tmp_path / "t.jsonl").write_text("\n".join(lines[:-1] + [json.dumps(footer)]) + "\n")
        with pytest.raises(TraceMalformed) as e:
            read_trace(tmp_path / "t.jsonl")
        assert (e.value.line, e.value.field) == (n, field_)


def test_a_json_fraction_is_not_an_integer(sim, tmp_path):
    h, steps, f = sim[0]
    st = copy.deepcopy(steps)
    st[3]["state"]["currentEpoch"]["n1"] = float(st[3]["state"]["currentEpoch"]["n1"])
    p = _write(tmp_path / "t.jsonl", h, st, f)
    s = validate_corpus([p], config="kraft-graph-small")
    r = s["results"][0]
    assert r["verdict"] == "malformed" and r["malformed"]["field"] == "state.currentEpoch"
    assert "is not an integer" in r["malformed"]["message"] and r["malformed"]["line"] == 5


# --------------------------------------------------------------------------- F2: judges

def test_no_config_with_a_bug_switched_on_may_judge():
    entries = load_manifest(REPO_ROOT / "tlc_configs")
    finding = next(e for e in entries if e.name == "reassign-finding-f-vote-for-non-voter-safe")
    assert finding.profile != "bugs" and finding.expect == "ok"     # what slipped through
    assert not may_judge(finding)
    assert may_judge(next(e for e in entries if e.name == "kraft-graph-small"))


# --------------------------------------------------------------------------- F3, F4

@pytest.mark.tlc
@pytest.mark.parametrize("mode", ["graph", "config"])
def test_one_trace_never_changes_another_ones_verdict(mode, sim, tmp_path, tlc_toolchain):
    """a: a real violation at its last step; b: the same prefix, then a value TLC cannot
    write; c: the same prefix, then a string where the spec has an integer (TLC cannot evaluate
    the step); chaos-1 untouched.  Each is judged as it is when alone."""
    h, steps, f = sim[0]
    d = tmp_path / "c"
    d.mkdir()
    a = copy.deepcopy(steps)
    e = a[-1]["state"]["currentEpoch"]
    e["n1"] = 1 if e["n1"] == 2 else 2
    _write(d / "a-violation.jsonl", h, a, f, "a")
    b = copy.deepcopy(steps)
    b[-1]["state"]["leaderId"]["n1"] = "v\u00e9"
    _write(d / "b-unwritable.jsonl", h, b, f, "b")
    c = copy.deepcopy(steps[:5])
    c[4]["state"]["currentEpoch"]["n1"] = "one"
    _write(d / "c-string-epoch.jsonl", h, c, f, "c")
    _write(d / "good.jsonl", *sim[1])
    kw = {"graph": "kraft-graph-small"} if mode == "graph" else {"config": "kraft-graph-small"}
    s = validate_corpus([d], **kw)
    last = len(steps) - 1
    ra = _verdict(s, "a-violation.jsonl")
    assert ra["verdict"] == "invalid" and ra["failed_step"] == last
    assert "currentEpoch" in ra["diagnosis"]["summary"]
    rb = _verdict(s, "b-unwritable.jsonl")
    assert rb["verdict"] == "out_of_scope"
    assert rb["reason"].startswith(f"step {last}: the observed state cannot be written for TLC")
    rc = _verdict(s, "c-string-epoch.jsonl")
    assert rc["verdict"] == "invalid" and rc["failed_step"] == 4
    assert _verdict(s, "good.jsonl")["verdict"] == "valid"
    assert s["counts"] == {"valid": 1, "invalid": 2, "out_of_scope": 1, "malformed": 0}
    assert not s["ok"]


# --------------------------------------------------------------------------- F7

@pytest.mark.tlc
def test_a_trace_that_observes_nothing_or_makes_up_actions_is_not_valid(sim, tmp_path,
                                                                          tlc_toolchain):
    h, steps, f = sim[0]
    d = tmp_path / "c"
    d.mkdir()
    blind = [{**steps[0], "state": {}}] + [
        {**s, "action": "AnythingAtAll", "state": {}} for s in steps[1:11]]
    _write(d / "blind.jsonl", h, blind, f)
    stutter = copy.deepcopy(steps[:6])
    stutter.insert(5, {**copy.deepcopy(stutter[4]), "action": "FormatDiskAndElectEveryone"})
    for k, s in enumerate(stutter):
        s["step"] = k
    _write(d / "stutter-made-up.jsonl", h, stutter, f)
    s = validate_corpus([d], graph="kraft-graph-small")
    rb = _verdict(s, "blind.jsonl")
    assert rb["verdict"] == "out_of_scope" and "observes no variable" in rb["reason"]
    rs = _verdict(s, "stutter-made-up.jsonl")
    assert rs["verdict"] == "invalid" and rs["failed_step"] == 5
    assert ("FormatDiskAndElectEveryone is not an action of the spec's next-state relation"
            in rs["diagnosis"]["summary"])
    assert s["steps_judged"] == 6 and not s["ok"]      # steps 0-5 of the stutter trace


def test_init_is_step_zero_only(sim, tmp_path):
    h, steps, f = sim[0]
    st = copy.deepcopy(steps)
    st[3]["action"] = "Init"
    with pytest.raises(TraceMalformed) as e:
        read_trace(_write(tmp_path / "t.jsonl", h, st, f))
    assert (e.value.line, e.value.field) == (5, "action")


# --------------------------------------------------------------------------- F11

def test_a_string_that_reads_like_a_renamed_model_value_stays_a_string():
    mv = ModelValues({"n1", "zz"})
    assert mv.tla("TC_mv_n1") == '"TC_mv_n1"' and mv.tla("n1") == "TC_mv_n1"
    assert mv.tla(("TC_mv_zz", "zz")) == '<<"TC_mv_zz", TC_mv_zz>>'
    sv = SharedValues(ModelValues({"n1"}))
    assert sv.ref("TC_mv_n1") == '"TC_mv_n1"' and sv.ref("n1") == "TC_mv_n1"


# --------------------------------------------------------------------------- the self-check

@pytest.mark.tlc
def test_the_demo_self_check_judges_every_hostile_variant_as_it_must(sim, tmp_path,
                                                                     tlc_toolchain):
    from trace_checker.selfcheck import CASES, pick_source, run_selfcheck
    d = tmp_path / "src"
    d.mkdir()
    for seed, lines in sim.items():
        _write(d / f"s{seed}.jsonl", *lines)
    src = pick_source(list(d.glob("*.jsonl")))
    assert src is not None
    s = run_selfcheck(src, tmp_path / "out")
    assert [r["case"] for r in s["rows"] if not r["as_expected"]] == []
    assert s["ok"] and s["cases"] == len(CASES) == 17
    assert (tmp_path / "out" / "selfcheck.json").is_file()


def test_a_failed_source_prunes_only_what_no_trace_still_needs():
    """Trace 0 observes sources 1, 2, 3, 4; trace 1 observes 1, 5, 3.  Once source 2 fails,
    trace 0 stops there: 4 is needed by nobody, 3 still by trace 1."""
    from trace_checker.corpus import _pruner
    prune = _pruner([[1, 2, 3, 4], [1, 5, 3]], [[2, 3, 4, 9], [5, 3, 8]])
    assert prune(set(), set()) == set()
    assert prune({2}, set()) == {4}
    assert prune({2, 5}, set()) == {3, 4}
    # a failed step (3 -> 4) of trace 0 prunes its later source 4, not 3 (judged in full later)
    assert prune(set(), {(3, 4)}) == {4}
    assert prune(set(), {(1, 5)}) == {5}                # trace 1's step: 3 is trace 0's too


# --------------------------------------------------------------------------- second review

@pytest.mark.tlc
@pytest.mark.parametrize("mode", ["graph", "config"])
def test_a_header_cannot_make_the_specs_strings_model_values(mode, sim, tmp_path,
                                                             tlc_toolchain):
    """Declaring "Leader" a model value made TLC's `role[j] # "Leader"` true for the leader
    (a spec violation judged valid), in any trace of the same run."""
    h, steps, f = sim[0]
    d = tmp_path / "c"
    d.mkdir()
    hl = copy.deepcopy(h)
    hl["model_values"] = sorted(hl["model_values"] + ["Leader"])
    _write(d / "declares-leader.jsonl", hl, steps[:1], f, "declares")
    _write(d / "good.jsonl", *sim[1])
    kw = {"graph": "kraft-graph-small"} if mode == "graph" else {"config": "kraft-graph-small"}
    s = validate_corpus([d], **kw)
    r = _verdict(s, "declares-leader.jsonl")
    assert r["verdict"] == "out_of_scope"
    assert "model values the config kraft-graph-small does not have: Leader" in r["reason"]
    assert _verdict(s, "good.jsonl")["verdict"] == "valid"


@pytest.mark.tlc
def test_a_made_up_stutter_is_refused_under_a_specification_config(tmp_path, tlc_toolchain):
    """kraft-ci-liveness names SPECIFICATION LiveSpec (no NEXT): its actions were not read, so
    any stutter passed."""
    d = tmp_path / "sim"
    d.mkdir()
    run_seeds(RunSpec("kraft", [0], "chaos", 40,
                      str(REPO_ROOT / "tlc_configs/kraft-ci-liveness.cfg")), d)
    p = next(d.glob("*.jsonl"))
    lines = [json.loads(x) for x in p.read_text().splitlines()]
    h, steps, f = lines[0], lines[1:-1], lines[-1]
    st = copy.deepcopy(steps[:6])
    st.insert(5, {**copy.deepcopy(st[4]), "action": "FormatDiskAndElectEveryone"})
    for k, s in enumerate(st):
        s["step"] = k
    q = _write(tmp_path / "stutter.jsonl", h, st, f)
    r = validate_corpus([q], config="kraft-ci-liveness")["results"][0]
    assert r["verdict"] == "invalid" and r["failed_step"] == 5
    assert "is not an action of the spec's next-state relation" in r["diagnosis"]["summary"]


@pytest.mark.tlc
def test_a_trace_whose_liveness_cannot_be_judged_fails_the_run(sim, tmp_path, tlc_toolchain):
    h, steps, f = sim[0]
    st = copy.deepcopy(steps)
    del st[4]["state"]["role"]                   # one step leaves a timer variable out
    p = _write(tmp_path / "t.jsonl", h, st, f)
    s = validate_corpus([p], graph="kraft-graph-small")
    r = s["results"][0]
    assert r["verdict"] == "valid" and "does not observe role" in r["liveness_not_judged"]
    assert s["liveness_not_judged"] == 1 and not s["ok"]
    assert validate_corpus([p], graph="kraft-graph-small", max_liveness_not_judged=1)["ok"]
