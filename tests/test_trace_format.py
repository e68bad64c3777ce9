"""The trace format kraftcheck-trace/1: schema validity, canonical bytes, the fast encoder
against the reference projection, ITF export, and the simulate / export CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kraftcheck.cli import app
from kraftcore.values import from_itf, to_itf
from refimpl.kraft.adapter import KRaftAdapter
from refimpl.sim.faults import get_profile
from refimpl.sim.protocol import dumps
from refimpl.sim.simulator import Simulator, run_one
from refimpl.trace.format import SCHEMA, TraceFormatError, read_trace, validate_lines
from refimpl.trace.itf import export_itf, trace_to_itf

runner = CliRunner()


@pytest.fixture(scope="module")
def trace():
    return run_one(KRaftAdapter(), 4, get_profile("chaos"), 500)


def test_trace_is_schema_valid(trace):
    assert validate_lines(trace.lines) == []


def test_header_step_footer(trace):
    h = json.loads(trace.lines[0])
    assert h["kind"] == "header" and h["schema"] == SCHEMA
    assert h["protocol"] == "kraft" and h["seed"] == 4 and h["fault_profile"] == "chaos"
    assert h["bug"] is None and h["bounds"] is None and h["spec_module"] == "KRaft"
    assert {"n1", "n2", "n3", "Nil"} <= set(h["model_values"])
    s0 = json.loads(trace.lines[1])
    assert s0["step"] == 0 and s0["action"] == "Init" and s0["time_ms"] == 0
    assert set(s0["state"]) == set(h["variables"])
    f = json.loads(trace.lines[-1])
    assert f["kind"] == "footer" and f["actions"] == 500
    assert f["steps"] == trace.trace_steps == len(trace.lines) - 3 <= 500
    assert set(f["invariants"]) >= {"AtMostOneLeaderPerEpoch", "LogMatching", "NoDoubleVote",
                                    "LeaderCompleteness", "NoCommittedRecordLost",
                                    "HighWatermarkMonotonic"}
    assert all(v == "ok" for v in f["invariants"].values()) and f["violations"] == []


def test_every_line_is_canonical_json(trace):
    for line in trace.lines:
        assert dumps(json.loads(line)) == line


def test_no_stutter_steps_are_written(trace):
    states = [json.loads(l)["state"] for l in trace.lines[1:-1]]
    assert all(a != b for a, b in zip(states, states[1:]))
    assert trace.trace_steps < trace.steps  # crashes, partitions... were elided


def test_action_names_are_spec_action_labels(trace):
    labels = {"Timeout", "LeaderProgressTimeout", "Resign", "ClientRequest", "Restart",
              "SendVoteRequest", "SendBeginQuorumEpoch", "SendFetchRequest",
              "ReceiveVoteRequest", "ReceiveVoteResponse", "ReceiveBeginQuorumEpochRequest",
              "ReceiveBeginQuorumEpochResponse", "ReceiveEndQuorumEpochRequest",
              "ReceiveFetchRequest", "ReceiveFetchResponse", "DropMessage", "DuplicateMessage"}
    used = {json.loads(l)["action"] for l in trace.lines[2:-1]}
    assert used <= labels, used - labels


def test_message_steps_carry_node_and_message(trace):
    steps = [json.loads(l) for l in trace.lines[1:-1]]
    handled = [s for s in steps if s["action"].startswith("Receive")]
    sent = [s for s in steps if s["action"].startswith("Send")]
    assert handled and sent
    for s in handled:
        assert s["params"]["node"] == s["params"]["msg"]["dest"]
        assert s["action"] == "Receive" + s["params"]["msg"]["type"]
    for s in sent:  # one spec Send* step per request: the message appears in msgs
        m = s["params"]["msg"]
        assert s["params"]["node"] == m["src"] and m["type"].endswith("Request")
        assert any(k == m for k, _ in s["state"]["msgs"]["#map"])


class _Checked(KRaftAdapter):
    """Compares the cached fast encoder with the reference encoding of project()."""

    def encode_state(self, world):
        fast = super().encode_state(world)
        slow = dumps({k: to_itf(v) for k, v in self.project(world).items()})
        assert fast == slow
        return fast


@pytest.mark.parametrize("profile,seed", [("chaos", 1), ("crashes", 2), ("lossy", 3)])
def test_fast_encoder_matches_reference_projection(profile, seed):
    r = Simulator(_Checked(), seed, get_profile(profile), 700).run()
    assert r.steps == 700


def test_states_decode_as_tla_values(trace):
    for line in trace.lines[1:-1]:
        for k, v in json.loads(line)["state"].items():
            from_itf(v, k)


@pytest.mark.parametrize("mutate,needle", [
    (lambda ls: ls[:-1], "no footer"),
    (lambda ls: [ls[0]] + ls[2:], "step 0 must be action Init"),
    (lambda ls: ls[:2] + ls[3:], "out of order"),
    (lambda ls: [ls[0].replace('"kind":"header"', '"kind": "header"')] + ls[1:], "canonical"),
    (lambda ls: [ls[0].replace(SCHEMA, "other/9")] + ls[1:], "schema"),
    (lambda ls: ls + ["{}"], "after the footer"),
])
def test_validator_rejects_broken_traces(trace, mutate, needle):
    errs = validate_lines(mutate(list(trace.lines)))
    assert any(needle in e for e in errs), errs


def test_read_trace_and_itf_export(tmp_path, trace):
    p = tmp_path / "t.jsonl"
    p.write_text(trace.text())
    t = read_trace(p)
    n = trace.trace_steps
    assert len(t.steps) == n + 1 and t.footer["steps"] == n
    doc = trace_to_itf(p)
    assert doc["vars"] == t.variables
    assert len(doc["states"]) == n + 1
    assert doc["states"][0]["#meta"] == {"index": 0, "action": "Init", "params": {}, "time_ms": 0}
    for st_ in doc["states"]:
        assert set(st_) == set(doc["vars"]) | {"#meta"}
    out = export_itf(p, tmp_path / "itf")
    assert out.name == "kraft-chaos-4.itf.json"
    assert json.loads(out.read_text()) == doc


def test_read_trace_names_the_file_on_error(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text("not json\n")
    with pytest.raises(TraceFormatError, match="bad.jsonl"):
        read_trace(p)


# ---------------------------------------------------------------- CLI

def test_cli_simulate_writes_traces_and_manifest(tmp_path):
    out = tmp_path / "run"
    r = runner.invoke(app, ["simulate", "--protocol", "kraft", "--seeds", "0:2", "--faults", "lossy",
                            "--steps", "200", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["arguments"] == {"protocol": "kraft", "seeds": "0:2", "faults": "lossy", "steps": 200,
                              "bounds": None, "bug": None}
    assert [t["seed"] for t in m["traces"]] == [0, 1, 2]
    for t in m["traces"]:
        data = (out / t["file"]).read_bytes()
        assert len(data) == t["bytes"] and t["actions"] == 200 and t["violations"] == []
        assert t["steps"] == len(data.decode().splitlines()) - 3
        assert validate_lines(data.decode().splitlines()) == []
    assert m["summary"]["traces_with_violations"] == 0
    # same arguments, same bytes
    out2 = tmp_path / "run2"
    runner.invoke(app, ["simulate", "--seeds", "0:2", "--faults", "lossy", "--steps", "200",
                        "--out", str(out2)])
    for t in m["traces"]:
        assert (out / t["file"]).read_bytes() == (out2 / t["file"]).read_bytes()


def test_cli_bug_run_reports_violation(tmp_path):
    r = runner.invoke(app, ["simulate", "--seeds", "0:3", "--steps", "2000",
                            "--bug", "vote-ignores-log", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output   # the expected outcome: the bug is caught
    m = json.loads(r.stdout)
    assert m["summary"]["traces_with_violations"] >= 1
    t = next(t for t in m["traces"] if t["violations"])
    footer = json.loads((tmp_path / t["file"]).read_text().splitlines()[-1])
    assert footer["end_reason"] == "violation"
    assert footer["invariants"][t["violations"][0]["invariant"]] == "violated"
    assert json.loads((tmp_path / t["file"]).read_text().splitlines()[0])["bug"] == "vote-ignores-log"


@pytest.mark.parametrize("args", [
    ["--faults", "bogus"], ["--seeds", "5:1"], ["--seeds", "x"], ["--steps", "0"],
    ["--bug", "nope"], ["--protocol", "paxos"], ["--bounds", "/nonexistent.cfg"],
])
def test_cli_bad_arguments_exit_2(args):
    r = runner.invoke(app, ["simulate", "--seeds", "0", "--steps", "10"] + args)
    assert r.exit_code == 2, r.output


def test_cli_bad_bounds_names_file_and_line(tmp_path):
    cfg = tmp_path / "b.cfg"
    cfg.write_text("CONSTANTS\n  Server = {s1, s2\n  MaxEpoch = 2\n")
    r = runner.invoke(app, ["simulate", "--seeds", "0", "--steps", "10", "--bounds", str(cfg)])
    assert r.exit_code == 2
    out = r.output.replace("\n", "")
    # the shared cfg reader names the line where the bad constant's value starts
    assert "b.cfg:2" in out and "constant Server" in out


def test_cli_list_bugs_json():
    r = runner.invoke(app, ["simulate", "--list-bugs", "--json"])
    assert r.exit_code == 0
    rows = {b["name"]: b for b in json.loads(r.stdout)}
    for name in ("hwm-no-current-epoch-check", "diverging-epoch-off-by-one",
                 "double-vote-after-restart", "follower-hwm-uncapped"):
        assert rows[name]["protocol"] == "kraft" and rows[name]["caught_by"]


def test_cli_missing_protocol_adapter_is_a_clear_error(monkeypatch):
    from refimpl.sim import runner as sim_runner
    monkeypatch.setitem(sim_runner.PROTOCOLS, "elr", ("refimpl.elr.no_such_adapter", "ELRAdapter"))
    r = runner.invoke(app, ["simulate", "--protocol", "elr", "--seeds", "0", "--steps", "5"])
    assert r.exit_code == 2
    assert "not available" in r.output


def test_cli_export_itf(tmp_path, trace):
    p = tmp_path / "t.jsonl"
    p.write_text(trace.text())
    r = runner.invoke(app, ["export", "itf", str(p), "--out", str(tmp_path / "o"), "--json"])
    assert r.exit_code == 0, r.output
    written = json.loads(r.stdout)["written"]
    doc = json.loads(open(written[0]).read())
    assert doc["#meta"]["format"] == "ITF" and len(doc["states"]) == trace.trace_steps + 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    r = runner.invoke(app, ["export", "itf", str(bad), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2   # bad input (issue 10)
