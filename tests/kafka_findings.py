"""Which documented Kafka 3.7 finding (docs/kafka-conformance.md, F1..F15) explains a step that
the KIP-595 judge rejects.  A pure function of the trace's two states around the failing step
and the step's action: it names every finding whose Kafka behaviour the step shows, so a corpus
can be counted per finding and a test can assert that its seed reproduces its finding.

A step showing none of them is returned as "unexplained": an invalid Kafka trace that no finding
explains is a harness/projection defect or a new finding, never silently counted.
"""

from __future__ import annotations

import json
from pathlib import Path

NIL = "Nil"
NO_DIVERGENCE = {"epoch": -1, "endOffset": -1}

FINDINGS = {
    "F1": "KafkaVoteForgottenOnLeader",
    "F2": "KafkaCheckQuorumResigns",
    "F3": "KafkaResignedRepeatsEndQuorumEpoch",
    "F4": "KafkaClusterIdErrorsNotFatal",
    "F5": "KafkaRejectedCandidateBacksOff",
    "F6": "KafkaLeaderFromVoteResponse",
    "F7": "KafkaDivergingFetchNotCounted",
    "F8": "KafkaEndOffsetIsLastFetch",
    "F9": "KafkaHwmHiddenUntilEpochCommit",
    "F10": "KafkaFetchReturnsBatches",
    "F11": "KafkaObserverFetchesAnyVoter",
    "F12": "KafkaLeaderFlushAdvancesHwm",
    "F13": "KafkaObserverLogNotFlushed",
    "F14": "KafkaTruncationKeepsUnknownEpoch",
    "F15": "KafkaFetchResponseLeaderAndRecordsAtOnce",
}


def _msgs(state: dict) -> list[dict]:
    bag = state.get("msgs", [])
    if isinstance(bag, dict) and "#map" in bag:
        return [m for m, _count in bag["#map"]]
    return []


def _new_msgs(before: dict, after: dict) -> list[dict]:
    old = {json.dumps(m, sort_keys=True) for m in _msgs(before)}
    return [m for m in _msgs(after) if json.dumps(m, sort_keys=True) not in old]


def explain_step(before: dict, after: dict, action: str, params: dict,
                 voters: tuple[str, ...]) -> list[str]:
    """The findings (F-numbers) the step before -> after shows; [] if none."""
    out: list[str] = []
    role0, role1 = before["role"], after["role"]
    new = _new_msgs(before, after)
    # F1: a replica that had voted learns the leader (or leads) and its votedId becomes Nil
    for i, v in after["votedId"].items():
        if v == NIL and before["votedId"].get(i) not in (NIL, None) \
                and after["leaderId"][i] != NIL \
                and after["currentEpoch"][i] == before["currentEpoch"][i]:
            out.append("F1")
            break
    # F2: the check-quorum timeout resigns
    if action == "LeaderProgressTimeout" and any(
            role0[i] == "Leader" and role1[i] == "Resigned" for i in role1):
        out.append("F2")
    # F3: EndQuorumEpoch re-sent / answered / empty successors / first successor waits /
    # a resignation that sends none in its own step
    resigned = [i for i in role1 if role0[i] == "Leader" and role1[i] == "Resigned"]
    if action == "SendEndQuorumEpoch" or any(m["type"] == "EndQuorumEpochResponse" for m in new) \
            or any(m["type"] == "EndQuorumEpochRequest" and not m["preferredSuccessors"]
                   for m in new) \
            or (resigned and not any(m["type"] == "EndQuorumEpochRequest" for m in new)):
        out.append("F3")
    elif action == "ReceiveEndQuorumEpochRequest":
        m = params.get("msg", {})
        j = m.get("dest")
        if m.get("preferredSuccessors", [None])[:1] == [j] and role1.get(j) != "Candidate":
            out.append("F3")
    # F4: a clusterId error that is not fatal / not a rejection: answered (BeginQuorumEpoch,
    # EndQuorumEpoch), a leader's Fetch error naming no leader, a candidate's VoteResponse
    # error of its epoch that is not counted as a rejection
    m = params.get("msg", {})
    i = m.get("dest")
    if any(r.get("error") == "INVALID_CLUSTER_ID" and r["type"] in (
            "BeginQuorumEpochResponse", "EndQuorumEpochResponse") for r in new) \
            or any(r["type"] == "FetchResponse" and r.get("error") == "INVALID_CLUSTER_ID"
                   and r.get("leaderId") == NIL and role1.get(r["src"]) == "Leader" for r in new) \
            or (action == "ReceiveVoteResponse" and m.get("error") == "INVALID_CLUSTER_ID"
                and role0.get(i) == "Candidate" and role1.get(i) == "Candidate"
                and m.get("epoch") == before["currentEpoch"][i]
                and after["votesRejected"][i] == before["votesRejected"][i]):
        out.append("F4")
    # F5: a candidate that cannot win stays Candidate
    if action == "ReceiveVoteResponse":
        for i in role1:
            if role0[i] == "Candidate" and role1[i] == "Candidate" \
                    and after["votesRejected"][i] != before["votesRejected"][i] \
                    and 2 * (len(voters) - len(_set(after["votesRejected"][i]))) <= len(voters):
                out.append("F5")
                break
    # F6: a Vote response of the current epoch naming the leader makes the receiver follow it
    if action == "ReceiveVoteResponse":
        m = params.get("msg", {})
        i = m.get("dest")
        if i in role1 and role1[i] == "Follower" and role0[i] in ("Candidate", "Voted", "Unattached") \
                and after["currentEpoch"][i] == before["currentEpoch"][i]:
            out.append("F6")
    if action == "ReceiveFetchRequest":
        m = params.get("msg", {})
        j, f = m.get("dest"), m.get("src")
        resp = [r for r in new if r["type"] == "FetchResponse" and r["dest"] == f]
        # F7: a diverging fetch leaves the voter unendorsed / the window unchanged
        if resp and resp[0].get("divergingEpoch", NO_DIVERGENCE) != NO_DIVERGENCE \
                and f in after["followerEndOffset"].get(j, {}) \
                and after["followerEndOffset"][j][f] == -1:
            out.append("F7")
        # F8: the recorded end offset goes down
        fe0 = before["followerEndOffset"].get(j, {})
        fe1 = after["followerEndOffset"].get(j, {})
        if f in fe0 and f in fe1 and fe1[f] < fe0[f] and role1.get(j) == "Leader" \
                and role0.get(j) == "Leader":
            out.append("F8")
        # F9: a new leader's response hides its high watermark (-1, where KRaft.tla sends the
        # leader's current one, 0 or more)
        if resp and resp[0].get("error") in ("NONE", "NOT_FOLLOWER") \
                and resp[0].get("highWatermark") == -1:
            out.append("F9")
        # F10: several records in one response
        if resp and len(resp[0].get("records", [])) > 1:
            out.append("F10")
    # F11: an observer follower fetches from a voter that is not its leader
    if action == "SendFetchRequest":
        m = params.get("msg", {})
        i = m.get("src")
        if i not in voters and role1.get(i) == "Follower" and m.get("dest") != after["leaderId"][i]:
            out.append("F11")
    # F15 (replay's H3): a replica that learns its epoch's leader from a FetchResponse appends
    # the response's records in the same step (KafkaRaftClient.maybeHandleCommonResponse:
    # "allows an observer to discover the leader and append to the log in the same Fetch")
    if action == "ReceiveFetchResponse":
        m = params.get("msg", {})
        i = m.get("dest")
        if i in role1 and before["leaderId"][i] == NIL and role1[i] == "Follower" \
                and role0[i] in ("Unattached", "Voted", "Candidate") \
                and after["currentEpoch"][i] == before["currentEpoch"][i] \
                and after["log"][i] != before["log"][i]:
            out.append("F15")
    # F12: the leader's HWM moves without a Fetch
    if action in ("ClientRequest", "AdvanceHighWatermarkOnFlush", "Timeout", "ReceiveVoteResponse"):
        for i in role1:
            if role1[i] == "Leader" and after["highWatermark"][i] > before["highWatermark"][i]:
                out.append("F12")
                break
    # F13: an observer's restart loses records of its log (it never flushed them)
    if action == "Restart":
        i = params.get("node")
        if i is not None and i not in voters and len(after["log"][i]) < len(before["log"][i]):
            out.append("F13")
    # F14: a DivergingEpoch whose epoch the follower lacks: Kafka cuts at the end of its own
    # largest epoch below it, not at the leader's EndOffset
    if action == "ReceiveFetchResponse":
        m = params.get("msg", {})
        i, div = m.get("dest"), m.get("divergingEpoch", NO_DIVERGENCE)
        if i in after["log"] and div != NO_DIVERGENCE and div["epoch"] > 0:
            log0 = before["log"][i]
            kept = end_offset_for_epoch(log0, div["epoch"])
            if largest_epoch_at_most(log0, div["epoch"]) != div["epoch"] \
                    and kept > div["endOffset"] and len(after["log"][i]) == kept:
                out.append("F14")
    return out


def largest_epoch_at_most(log: list[dict], epoch: int) -> int:
    """KRaftLog!LargestEpochAtMost: the largest epoch <= epoch with a record in log, else 0."""
    return max([0] + [r["epoch"] for r in log if r["epoch"] <= epoch])


def end_offset_for_epoch(log: list[dict], epoch: int) -> int:
    """KRaftLog!EndOffsetForEpoch: the offset of the first record of an epoch > epoch."""
    return next((k for k, r in enumerate(log) if r["epoch"] > epoch), len(log))


def _set(v) -> list:
    return v["#set"] if isinstance(v, dict) and "#set" in v else list(v)


def read_steps(path: str | Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    header = lines[0]
    steps = [line for line in lines if line.get("kind") == "step"]
    return header, steps


def explain_failure(path: str | Path, failed_step: int) -> list[str]:
    """The findings shown by the step a judge rejected (step numbers as in the trace)."""
    header, steps = read_steps(path)
    by = {s["step"]: s for s in steps}
    if failed_step not in by or failed_step - 1 not in by:
        return []
    voters = tuple(sorted(v for v in by[0]["state"]["followerEndOffset"].get(
        next(iter(by[0]["state"]["followerEndOffset"])), {})))
    s = by[failed_step]
    return explain_step(by[failed_step - 1]["state"], s["state"], s["action"],
                        s.get("params", {}), voters)


def require_harness() -> None:
    """Skip where Java or Maven is missing (never under CI=true, where that fails), fail when
    the raft harness jar is unusable: the preamble of every test that runs Kafka."""
    import os
    import shutil

    import pytest
    present = bool(shutil.which("java") or os.environ.get("KRAFTCHECK_JAVA")) and bool(
        shutil.which("mvn"))
    if not present and os.environ.get("CI", "").lower() not in ("1", "true"):
        pytest.skip("Java 17 and Maven are needed to build and run kafka_harness/ (make setup)")
    from kafka_bridge.toolchain import HarnessError, find_harness
    try:
        find_harness("raft")
    except HarnessError as e:
        pytest.fail(f"the Kafka raft harness is unusable: {e}")


def judge_without(judge: str, switch: str, folder: Path) -> Path:
    """The judge's config with one switch off (a .cfg outside the manifest)."""
    from kraftcore.paths import CONFIG_DIR
    text = (CONFIG_DIR / f"{judge}.cfg").read_text()
    assert f"    {switch} = TRUE\n" in text
    out = folder / f"{judge.replace('.', '_')}-without-{switch}.cfg"
    out.write_text(text.replace(f"    {switch} = TRUE\n", f"    {switch} = FALSE\n"))
    return out
