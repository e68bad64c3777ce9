"""Counterexample diagrams (kraftcheck.tlc.diagram; `tlc run --diagram`, `tlc diagram`)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kraftcheck.cli import app
from kraftcheck.tlc.diagram import DiagramError, build_chart, draw

runner = CliRunner()


def _msg(t, src, dst, epoch=1, **kw):
    return {"type": t, "src": src, "dest": dst, "epoch": epoch, **kw}


def _kraft_state(msgs, role=None, epoch=None, log=None, hwm=None):
    servers = ("n1", "n2", "n3")
    role = role or {}
    epoch = epoch or {}
    return {"role": {s: role.get(s, "Unattached") for s in servers},
            "currentEpoch": {s: epoch.get(s, 0) for s in servers},
            "leaderId": {s: "Nil" for s in servers},
            "log": {s: (log or {}).get(s, []) for s in servers},
            "highWatermark": {s: (hwm or {}).get(s, 0) for s in servers},
            "msgs": {"#map": [[m, n] for m, n in msgs]}}


VOTE = _msg("VoteRequest", "n1", "n2", lastOffset=0, lastOffsetEpoch=0)
VOTE3 = _msg("VoteRequest", "n1", "n3", lastOffset=0, lastOffsetEpoch=0)
GRANT = _msg("VoteResponse", "n2", "n1", voteGranted=True, error="NONE")

KRAFT_STEPS = [
    {"index": 1, "action": "Init", "state": _kraft_state([])},
    {"index": 2, "action": "Timeout",
     "state": _kraft_state([], role={"n1": "Candidate"}, epoch={"n1": 1})},
    {"index": 3, "action": "SendVoteRequest",
     "state": _kraft_state([(VOTE, 1)], role={"n1": "Candidate"}, epoch={"n1": 1})},
    {"index": 4, "action": "SendVoteRequest",
     "state": _kraft_state([(VOTE, 1), (VOTE3, 1)], role={"n1": "Candidate"}, epoch={"n1": 1})},
    {"index": 5, "action": "HandleVoteRequest",
     "state": _kraft_state([(VOTE3, 1), (GRANT, 1)], role={"n1": "Candidate", "n2": "Voted"},
                           epoch={"n1": 1, "n2": 1})},
    {"index": 6, "action": "DropMessage",
     "state": _kraft_state([(GRANT, 1)], role={"n1": "Candidate", "n2": "Voted"},
                           epoch={"n1": 1, "n2": 1})},
]


def test_kraft_chart_pairs_each_send_with_its_receipt_or_loss():
    chart = build_chart("t", "spec/MCKRaft.tla", KRAFT_STEPS, "SomeInvariant")
    assert chart.lifelines == ["n1", "n2", "n3"]
    arrows = sorted((a.label.split()[0], a.src, a.dst, a.sent, a.received, a.lost)
                    for a in chart.arrows)
    assert arrows == [
        ("Vote", "n1", "n2", 2, 4, False),         # sent in state 3, received in state 5
        ("Vote", "n1", "n3", 3, 5, True),          # lost by DropMessage in state 6
        ("Vote", "n2", "n1", 4, None, False),      # the grant is still in flight at the end
    ]
    assert "granted" in next(a.label for a in chart.arrows if a.src == "n2")
    assert chart.notes[(1, "n1")] == ["Candidate e1"]
    assert chart.notes[(4, "n2")] == ["Voted e1"]
    assert chart.footer == "SomeInvariant is violated in state 6"


def test_drawing_is_deterministic_and_checks_the_format(tmp_path):
    chart = build_chart("t", "spec/MCKRaft.tla", KRAFT_STEPS, "SomeInvariant")
    a, b = draw(chart, tmp_path / "a.svg"), draw(chart, tmp_path / "b.svg")
    assert a.read_bytes() == b.read_bytes()
    svg = a.read_text()
    assert "SomeInvariant is violated in state 6" in svg and "lost" in svg
    png = draw(chart, tmp_path / "c.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(DiagramError, match="must be .svg, .png or .pdf"):
        draw(chart, tmp_path / "c.jpg")
    with pytest.raises(DiagramError, match="no counterexample"):
        build_chart("ok-run", "spec/MCKRaft.tla", [], None)
    with pytest.raises(DiagramError, match="no diagram for the variables"):
        build_chart("x", "spec/Other.tla", [{"index": 1, "action": "Init", "state": {"y": 1}}],
                    None)


def test_tlc_diagram_command_rejects_bad_input(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text("{not json")
    r = runner.invoke(app, ["tlc", "diagram", str(bad), "--out", str(tmp_path / "x.svg")])
    assert r.exit_code == 2 and "line 1: not JSON" in r.output
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"name": "kraft-ci-3voters", "spec": "spec/MCKRaft.tla",
                              "violated": None, "counterexample": []}))
    r = runner.invoke(app, ["tlc", "diagram", str(ok), "--out", str(tmp_path / "x.svg")])
    assert r.exit_code == 2 and "no counterexample to draw" in r.output
    r = runner.invoke(app, ["tlc", "run", "kraft-ci-3voters", "--diagram", "x.gif"])
    assert r.exit_code == 2 and "must end in .svg, .png, .pdf" in r.output


@pytest.mark.tlc
def test_elr_last_replica_standing_diagram_from_tlc(tmp_path, tlc_toolchain):
    """The KIP-966 T0..T4 story (ELR off) drawn from a real TLC counterexample."""
    svg = tmp_path / "elr.svg"
    r = runner.invoke(app, ["tlc", "run", "elr-bug-elr-disabled", "--workers", "1", "--json",
                            "--diagram", str(svg)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["violated"] == "NoAckedRecordLost" and doc["diagram"] == str(svg)
    text = svg.read_text()
    # on the asynchronous spec (issue 14) the shortest story shrinks the ISR by controlled
    # shutdowns, not by an AlterPartition
    for label in ("b1", "b2", "b3", "controller", "Fetch: records", "controlled shutdown",
                  "shuts down (unclean)", "NoAckedRecordLost is violated"):
        assert label in text, label
    (tmp_path / "r.json").write_text(r.stdout)
    r = runner.invoke(app, ["tlc", "diagram", str(tmp_path / "r.json"), "--out",
                            str(tmp_path / "elr.png")])
    assert r.exit_code == 0 and (tmp_path / "elr.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.tlc
@pytest.mark.deep
def test_kraft_figure8_diagram_from_tlc(tmp_path, tlc_toolchain):
    """KIP-595's Figure-8 story (no current-epoch rule): several minutes of TLC."""
    svg = tmp_path / "k.svg"
    r = runner.invoke(app, ["tlc", "run", "kraft-bug-no-current-epoch-rule", "--json",
                            "--diagram", str(svg)])
    assert r.exit_code == 0, r.output
    text = svg.read_text()
    assert "LeaderCompleteness is violated" in text and "HWM 1" in text and "Leader e3" in text


@pytest.mark.tlc
def test_demo_review_stage(tmp_path, tlc_toolchain):
    from kraftcheck.commands.demo import REVIEW_DIAGRAM, _stage_review

    s = _stage_review(tmp_path, False)
    assert s["ok"] and s["problems"] == []
    assert (tmp_path / "spec" / "index.html").is_file() and (tmp_path / "spec" / "KRaft.html").is_file()
    svg = (tmp_path / "diagrams" / f"{REVIEW_DIAGRAM}.svg").read_text()
    assert "NoAckedRecordLost is violated" in svg


def test_reassignment_chart_has_the_admin_lane_voter_sets_and_assignments():
    """KRaftReassign.tla counterexamples: the administrator's AlterPartitionReassignments gets
    a lane after the replicas, VoterAssignment records show CurrentVoters -> TargetVoters, and
    a replica's voter set is noted whenever it changes."""
    va = {"epoch": 1, "value": "VoterAssignment", "currentVoters": {"#set": ["n1"]},
          "targetVoters": {"#set": ["n1", "n2"]}}
    req = {"type": "AlterPartitionReassignmentsRequest", "src": "admin", "dest": "n1",
           "targetVoters": {"#set": ["n1", "n2"]}}

    def st(msgs, log_n1, vs_n1):
        s = _kraft_state(msgs, role={"n1": "Leader"}, epoch={"n1": 1}, log={"n1": log_n1})
        s["voterSet"] = {"n1": {"#set": vs_n1}, "n2": {"#set": ["n1"]}, "n3": {"#set": ["n1"]}}
        return s

    steps = [
        {"index": 1, "action": "Init", "state": st([], [], ["n1"])},
        {"index": 2, "action": "SendAlterPartitionReassignments", "state": st([(req, 1)], [], ["n1"])},
        {"index": 3, "action": "ReceiveAlterPartitionReassignmentsRequest",
         "state": st([], [va], ["n1", "n2"])},
    ]
    chart = build_chart("r", "spec/MCKRaftReassign.tla", steps, "QuorumCanStillElectALeader")
    assert chart.lifelines == ["n1", "n2", "n3", "admin"]
    (a,) = chart.arrows
    assert (a.src, a.dst, a.sent, a.received) == ("admin", "n1", 1, 2)
    assert a.label == "AlterReassignments {n1,n2}"
    assert "log [VA1{n1}->{n1,n2}]" in chart.notes[(2, "n1")]
    assert "voters {n1,n2}" in chart.notes[(2, "n1")] and "voters {n1}" in chart.notes[(0, "n2")]
