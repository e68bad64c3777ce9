"""Kafka's disk-loss traces (docs/kafka-conformance.md §4, "Unbounded corpus over every fault
profile"): a run of the disk-loss profile may restart a replica with an empty log and
quorum-state store (LoseDisk, an action of spec/KRaftHistory.tla), so its trace is of KRaftHistory,
with the ghost map ghostLeaders that kafka_bridge/raft.py computes from the projected states.  Its
kafka-3.7 judge is kraft-deep-kafka-3.7-disk-loss (every Kafka switch on, DiskLossRejoin =
"AfterNewLeaderCommitted", the harness's rule: kafka_harness/raft Simulation.rejoinAllowed).  The
same judge with DiskLossRejoin = "Never" rejects the trace at its LoseDisk step, so the judge's
rule, not a gap of the checker, is what accepts it."""

from __future__ import annotations

import json

import pytest

from kafka_findings import require_harness
from kraftcore.paths import CONFIG_DIR

JUDGE = "kraft-deep-kafka-3.7-disk-loss"
# disk-loss seed 23 loses n3's disk at step 39, the earliest LoseDisk of the unbounded corpus
# (seeds 0-29, --steps 250); 42 steps keep the check to one short neighbourhood run
SEED, STEPS, LOSE_DISK_STEP = 23, 42, 39


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    require_harness()
    from kafka_bridge.raft import KafkaRunSpec, run
    out = tmp_path_factory.mktemp("kafka-disk-loss")
    m = run(KafkaRunSpec(seeds=[SEED], faults="disk-loss", steps=STEPS), out)
    return out / m["traces"][0]["file"]


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_a_disk_loss_trace_is_of_kraft_history_with_the_computed_ghost(trace):
    head, *rest = _lines(trace)
    steps = [s for s in rest if s["kind"] == "step"]
    assert head["spec_module"] == "KRaftHistory" and head["variables"][-1] == "ghostLeaders"
    assert [s["step"] for s in steps if s["action"] == "LoseDisk"] == [LOSE_DISK_STEP]
    # ghostLeaders: every replica Leader of epoch e after some step (KRaftHistory RecordLeaders)
    led: dict[int, set[str]] = {}
    for s in steps:
        st = s["state"]
        if s["step"]:
            for n, role in st["role"].items():
                if role == "Leader":
                    led.setdefault(st["currentEpoch"][n], set()).add(n)
        ghost = st["ghostLeaders"]
        got = {e: set(v["#set"]) for e, v in ghost["#map"]} if ghost else {}
        assert got == led, s["step"]
    assert led, "no leader was elected: the trace does not exercise the ghost"


def test_other_profiles_and_bounded_runs_stay_kraft_traces():
    from kafka_bridge.raft import loses_disks
    from refimpl.kraft.adapter import KRaftBounds
    from refimpl.sim.protocol import SimLimits
    free = KRaftBounds(voters=("n1", "n2", "n3"))
    assert loses_disks("disk-loss", free)
    assert not any(loses_disks(p, free) for p in ("none", "lossy", "partitions", "crashes",
                                                   "chaos", "delays"))
    no_restart = KRaftBounds(voters=("n1", "n2"), limits=SimLimits(max_restarts=0))
    assert not loses_disks("disk-loss", no_restart)     # kraft-graph-small: MaxRestarts = 0


@pytest.mark.tlc
def test_the_kafka_judge_accepts_the_disk_loss_and_a_never_judge_rejects_it(trace, tmp_path,
                                                                            tlc_toolchain):
    from trace_checker.corpus import validate_corpus
    ok = validate_corpus([trace], config=JUDGE)["results"][0]
    assert ok["verdict"] == "valid", ok.get("diagnosis")
    text = (CONFIG_DIR / f"{JUDGE}.cfg").read_text()
    rule = '    DiskLossRejoin = "AfterNewLeaderCommitted"\n'
    assert rule in text
    never = tmp_path / "kraft-deep-kafka-3_7-disk-loss-never.cfg"
    never.write_text(text.replace(rule, '    DiskLossRejoin = "Never"\n'))
    bad = validate_corpus([trace], config=str(never),
                          module="spec/MCKRaftHistory.tla")["results"][0]
    assert bad["verdict"] == "invalid" and bad["failed_step"] == LOSE_DISK_STEP, bad
    d = bad["diagnosis"]
    assert d["claimed_action"] == "LoseDisk" and d["claimed_action_enabled"] is False, d
