"""Kafka 3.7 findings F13 and F14 (docs/kafka-conformance.md; the harness author's H1 and H2).

F13 KafkaObserverLogNotFlushed: an observer never flushes its log (KafkaRaftClient.appendAsFollower
flushes only `if (quorum.isVoter())`), so its restart loses the unflushed records.  F14
KafkaTruncationKeepsUnknownEpoch: ReplicatedLog.truncateToEndOffset ignores DivergingEpoch.EndOffset
when the follower lacks DivergingEpoch.Epoch.

The classifier part runs in milliseconds.  The Kafka part reproduces each finding from its seed:
the Kafka judge (every switch on) accepts the trace, the same judge with that one switch off rejects
it at a step tests/kafka_findings.py explains by the finding (the KIP judge itself stops earlier, at
F1, see test_kafka_conformance.py).  It runs the harness and two neighbourhood validations per
finding (minutes on the shared machine): marked deep.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_findings import (FINDINGS, explain_failure, explain_step, judge_without,
                            require_harness)
from kraftcore.paths import CONFIG_DIR

LC = "LeaderChange"


def _rec(epoch: int, value: str = LC) -> dict:
    return {"epoch": epoch, "value": value}


def _state(logs: dict, **kw) -> dict:
    servers = sorted(logs)
    base = {"role": {s: "Follower" for s in servers}, "votedId": {s: "Nil" for s in servers},
            "leaderId": {s: "Nil" for s in servers}, "currentEpoch": {s: 1 for s in servers},
            "highWatermark": {s: 0 for s in servers},
            "votesRejected": {s: {"#set": []} for s in servers},
            "followerEndOffset": {s: {} for s in servers}, "msgs": [], "log": logs}
    base.update(kw)
    return base


# =========================================================================== the classifier

def test_the_findings_are_numbered_with_their_switches():
    assert FINDINGS["F13"] == "KafkaObserverLogNotFlushed"
    assert FINDINGS["F14"] == "KafkaTruncationKeepsUnknownEpoch"


def test_classifier_recognises_an_observer_losing_its_log_on_restart():
    full = [_rec(1), _rec(1, "v1")]
    voters = ("n1", "n2", "n3")
    before = _state({"n1": full, "n2": full, "n3": full, "o1": full})
    after = _state({"n1": full, "n2": full, "n3": full, "o1": []})
    assert explain_step(before, after, "Restart", {"node": "o1"}, voters) == ["F13"]
    # a voter restarting keeps its (flushed) log: no finding; an observer keeping its log neither
    assert explain_step(before, before, "Restart", {"node": "o1"}, voters) == []
    lost_voter = _state({"n1": [], "n2": full, "n3": full, "o1": full})
    assert "F13" not in explain_step(before, lost_voter, "Restart", {"node": "n1"}, voters)


def _fetch_response(dest: str, epoch: int, end_offset: int, fetch_offset: int,
                    last_epoch: int) -> dict:
    return {"type": "FetchResponse", "src": "n2", "dest": dest, "epoch": 4, "leaderId": "n2",
            "error": "NONE", "highWatermark": 0, "records": [],
            "divergingEpoch": {"epoch": epoch, "endOffset": end_offset},
            "fetchOffset": fetch_offset, "lastFetchedEpoch": last_epoch}


def test_classifier_recognises_a_truncation_that_keeps_an_unknown_epoch():
    # the leader n2 of epoch 4 holds [LC2, LC4]: n1's Fetch (3, epoch 3) diverges at epoch 2,
    # end offset 1; n1 holds epochs 1 and 3, no 2: Kafka keeps [LC1, v1], KIP-595 cuts to [LC1]
    voters = ("n1", "n2", "n3")
    n1 = [_rec(1), _rec(1, "v1"), _rec(3)]
    resp = _fetch_response("n1", 2, 1, 3, 3)
    before = _state({"n1": n1, "n2": [_rec(2), _rec(4)], "n3": []})
    kafka = _state({"n1": n1[:2], "n2": [_rec(2), _rec(4)], "n3": []})
    kip = _state({"n1": n1[:1], "n2": [_rec(2), _rec(4)], "n3": []})
    assert explain_step(before, kafka, "ReceiveFetchResponse", {"msg": resp}, voters) == ["F14"]
    assert explain_step(before, kip, "ReceiveFetchResponse", {"msg": resp}, voters) == []
    # a follower that holds the diverging epoch truncates as the KIP says: no finding
    held = _fetch_response("n1", 1, 1, 3, 3)
    assert explain_step(before, kip, "ReceiveFetchResponse", {"msg": held}, voters) == []


def test_the_judges_and_the_model_checking_configs_switch_the_findings_on():
    from refimpl.sim.bounds import parse_cfg
    on = {"kraft-ci-kafka-observer-log-not-flushed": {"KafkaObserverLogNotFlushed"},
          "kraft-ci-witness-kafka-observer-log-not-flushed": {"KafkaObserverLogNotFlushed"},
          "kraft-deep-kafka-truncation-keeps-unknown-epoch": {"KafkaTruncationKeepsUnknownEpoch"},
          "kraft-deep-witness-kafka-truncation-keeps-unknown-epoch":
              {"KafkaTruncationKeepsUnknownEpoch"}}
    for name, wanted in on.items():
        consts = parse_cfg(str(CONFIG_DIR / f"{name}.cfg")).constants
        assert {s for s in FINDINGS.values() if consts[s] is True} == wanted, name
    judge = parse_cfg(str(CONFIG_DIR / "kraft-ci-kafka-3.7-observer.cfg")).constants
    assert judge["Observers"] == frozenset({"o1"}) and judge["MaxRestarts"] >= 1
    assert all(judge[s] is True for s in FINDINGS.values())


def test_each_witness_runs_the_model_of_its_safety_config():
    """A witness proves reachability only in the same model: same constants, constraints and
    symmetry; only what is checked differs."""
    from kraftcore.tlc.cfg import parse_cfg
    for safety, witness, expect in (
            ("kraft-ci-kafka-observer-log-not-flushed",
             "kraft-ci-witness-kafka-observer-log-not-flushed", "ObserverLogSurvivesRestart"),
            ("kraft-deep-kafka-truncation-keeps-unknown-epoch",
             "kraft-deep-witness-kafka-truncation-keeps-unknown-epoch",
             "NoTruncationKeepsUnknownEpoch")):
        a, b = (parse_cfg(CONFIG_DIR / f"{n}.cfg") for n in (safety, witness))
        assert a.constants == b.constants and a.substitutions == b.substitutions, witness
        model = [ln for ln in (CONFIG_DIR / f"{safety}.cfg").read_text().splitlines()
                 if ln.startswith(("SYMMETRY", "SPECIFICATION", "CONSTRAINT"))]
        text = (CONFIG_DIR / f"{witness}.cfg").read_text()
        assert all(ln in text for ln in model), witness
        assert expect in {*b.invariants, *b.properties}, witness
    constraints = ("AtMostOneCandidate", "VotingOnlyVotersHoldNoRecords",
                   "ClientRecordsOnlyInFirstEpoch")
    for n in ("kraft-deep-kafka-truncation-keeps-unknown-epoch",
              "kraft-deep-witness-kafka-truncation-keeps-unknown-epoch"):
        text = (CONFIG_DIR / f"{n}.cfg").read_text()
        assert all(f"    {c}\n" in text for c in constraints), n


# =========================================================================== Kafka itself

def _bounds_with_observer(folder: Path) -> Path:
    """The F13 reproduction's bounds: the observer judge's servers with room for a long run."""
    text = (CONFIG_DIR / "kraft-ci-kafka-3.7-observer.cfg").read_text()
    for old, new in (("MaxEpoch = 1", "MaxEpoch = 20"), ("MaxLogLength = 1", "MaxLogLength = 40"),
                     ("MaxRestarts = 1", "MaxRestarts = 10"), ("MaxInFlight = 1", "MaxInFlight = 12")):
        assert f"    {old}\n" in text, old
        text = text.replace(f"    {old}\n", f"    {new}\n")
    out = folder / "obs-bounds.cfg"
    out.write_text(text)
    return out


# finding -> (fault profile, seed, steps, observer bounds?, Kafka judge)
REPRODUCTIONS = {
    "F13": ("delays", 2, 250, True, "kraft-ci-kafka-3.7-observer"),
    "F14": ("lossy", 10, 400, False, "kraft-ci-kafka-3.7"),
}


@pytest.mark.deep
@pytest.mark.tlc
@pytest.mark.parametrize("finding", sorted(REPRODUCTIONS))
def test_kafka_reproduces_the_finding_and_its_switch_explains_it(finding, tmp_path, tlc_toolchain):
    require_harness()
    from kafka_bridge.raft import KafkaRunSpec, run
    from trace_checker.corpus import validate_corpus
    profile, seed, steps, observer, judge = REPRODUCTIONS[finding]
    bounds = _bounds_with_observer(tmp_path) if observer else None
    out = tmp_path / "traces"
    run(KafkaRunSpec(seeds=[seed], faults=profile, steps=steps,
                     bounds_path=str(bounds) if bounds else None), out)
    (path,) = sorted(out.glob("kafka-kraft-*.jsonl"))
    ok = validate_corpus([path], config=judge)["results"][0]
    assert ok["verdict"] == "valid", ok.get("diagnosis")
    cfg = judge_without(judge, FINDINGS[finding], tmp_path)
    bad = validate_corpus([path], config=str(cfg), module="spec/MCKRaft.tla")["results"][0]
    assert bad["verdict"] == "invalid", bad
    assert finding in explain_failure(path, bad["failed_step"]), bad.get("diagnosis")
