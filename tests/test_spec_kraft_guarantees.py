"""KIP-595 guarantees added by issue 13: which configs check them, and what the findings show.

The TLC runs of every ci / bugs config (exact counts, exact violated names) are in
test_spec_models.py, driven by the manifest; these tests pin the structure that makes those runs
mean what docs/spec-kraft.md says: the view-level invariants and NoIllegalState are checked in
every KIP-595 safety config, the second-leader finding is checked with NoIllegalState (a proof,
not a count comparison), and each witness / finding config expects the violation it documents.
"""

from __future__ import annotations

import pytest

from kraftcore.tlc.cfg import parse_cfg
from kraftcore.tlc.manifest import find_entry, load_manifest
from kraftcore.tlc.runner import run_config

ENTRIES = load_manifest()
KRAFT = [e for e in ENTRIES if e.name.startswith("kraft-")]

VIEW_INVARIANTS = {"KnownLeadersAgree", "KnownLeaderIsLeader", "LeaderHoldsItsLeaderChange",
                   "EndOffsetsAreCommonPrefixes", "NoIllegalState"}
HISTORY_INVARIANTS = {"ElectionSafety", "KnownLeaderWasElected"}


def _invariants(entry) -> set[str]:
    return set(parse_cfg(entry.cfg_path).invariants)


def _spec(entry) -> str:
    return parse_cfg(entry.cfg_path).sections["SPECIFICATION"][0]


def _safety_configs():
    """Every KIP-595 config that checks the protocol's safety (not a bug / finding / witness
    config, which list only the invariants they are about, and not the liveness config)."""
    return [e for e in KRAFT
            if e.expect == "ok" and e.profile in ("ci", "deep") and not _spec(e).endswith("LiveSpec")]


def _view(entry) -> list[str]:
    return parse_cfg(entry.cfg_path).sections.get("VIEW", [])


@pytest.mark.parametrize("entry", _safety_configs(), ids=lambda e: e.name)
def test_safety_configs_check_the_view_invariants_and_no_illegal_state(entry):
    missing = VIEW_INVARIANTS - _invariants(entry)
    if parse_cfg(entry.cfg_path).constants.get("DiskLossRejoin", "Never") != "Never":
        # with disk loss (kraft-deep-disk-loss-after-commit, the disk-loss judges of Kafka's
        # traces) a replica stuck in an older epoch may name the wiped replica as that epoch's
        # leader; the historical KnownLeaderWasElected is checked instead
        assert missing == {"KnownLeaderIsLeader"}
    else:
        assert not missing, f"{entry.name} does not check {sorted(missing)}"
    if _view(entry) == ["NetworkView"]:
        # the view has no high watermarks: the HWM checks are left to the configs without a
        # VIEW, the committed records' majority is checked on its own
        assert {"LeaderCompleteness", "CommittedRecordsOnMajority", "NoDoubleVote"} <= \
            _invariants(entry)
    else:
        assert not _view(entry), entry.name
        assert "HighWatermarkMonotonic" in parse_cfg(entry.cfg_path).properties


def test_the_exhaustive_two_in_flight_ci_config_and_its_witness_have_the_same_bounds():
    """kraft-ci-witness-end-quorum-epoch proves that Resign fires (EndQuorumEpoch requests in
    flight) under exactly the bounds of the exhaustive 3-voter ci config with two messages in
    flight, so that config does not pass because a bound made resignation unreachable."""
    ci = find_entry("kraft-ci-3voters-two-in-flight", ENTRIES)
    witness = find_entry("kraft-ci-witness-end-quorum-epoch", ENTRIES)
    a, b = parse_cfg(ci.cfg_path), parse_cfg(witness.cfg_path)
    assert ci.profile == witness.profile == "ci" and ci.mode == "bfs" and ci.distinct_states
    assert a.constants == b.constants and a.substitutions == b.substitutions
    for section in ("SPECIFICATION", "CONSTRAINT", "SYMMETRY", "VIEW"):
        assert a.sections.get(section) == b.sections.get(section), section
    assert a.constants["MaxInFlight"] == 2 and len(a.constants["Voters"]) == 3


def test_the_5voter_zombie_config_and_its_witness_and_bug_have_the_same_bounds():
    """With 5 voters the progress window decides: the witness shows a window holding a fetcher
    but no majority under the ci config's bounds, and the bug config (a non-empty window counts
    as progress) must violate ZombieLeaderStepsDown under them."""
    ci = find_entry("kraft-ci-5voters-zombie-leader", ENTRIES)
    witness = find_entry("kraft-ci-witness-5voters-partial-window", ENTRIES)
    bug = find_entry("kraft-bug-5voters-progress-any-fetch", ENTRIES)
    a, w, b = (parse_cfg(e.cfg_path) for e in (ci, witness, bug))
    assert len(a.constants["Voters"]) == 5 and a.constants["TimeoutVoters"] == frozenset({"n1"})
    assert a.constants == w.constants
    assert {k: v for k, v in a.constants.items() if k != "BugProgressAnyFetch"} == \
        {k: v for k, v in b.constants.items() if k != "BugProgressAnyFetch"}
    assert b.constants["BugProgressAnyFetch"] is True and a.constants["BugProgressAnyFetch"] is False
    assert a.sections.get("SYMMETRY") == w.sections.get("SYMMETRY") == b.sections.get("SYMMETRY")
    # The bug config drops the VIEW: TLC 2.15 cannot print a lasso found under VIEW and SYMMETRY
    # together ("Failed to recover the next state from its fingerprint"); its graph is exact
    # without it, only larger.
    assert a.sections.get("VIEW") == w.sections.get("VIEW") and a.sections.get("VIEW")
    assert b.sections.get("VIEW") is None
    assert _spec(ci) == _spec(bug) == "ZombieLiveSpec"
    assert {"ZombieLeaderStepsDown", "ProgressTimerSparesHeardLeader"} <= set(a.properties)
    assert ci.profile == "ci" and ci.expect == "ok" and ci.distinct_states
    assert bug.profile == "bugs" and bug.expect == "ZombieLeaderStepsDown"


@pytest.mark.parametrize("entry", [e for e in _safety_configs() if _spec(e) == "HistorySpec"],
                         ids=lambda e: e.name)
def test_history_configs_check_historical_election_safety(entry):
    assert HISTORY_INVARIANTS <= _invariants(entry)


def test_a_ci_config_checks_historical_election_safety():
    assert any(HISTORY_INVARIANTS <= _invariants(e) for e in KRAFT
               if e.profile == "ci" and e.expect == "ok")


def test_second_leader_finding_is_proved_by_no_illegal_state():
    finding = find_entry("kraft-finding-accept-second-leader", ENTRIES)
    restart = find_entry("kraft-ci-restart", ENTRIES)
    assert "NoIllegalState" in _invariants(finding) and finding.expect == "ok"
    assert "NoIllegalState" in _invariants(restart)
    assert "BugAcceptSecondLeader = TRUE" in finding.cfg_path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name, expect", [
    ("kraft-finding-disk-loss", "ElectionSafety"),
    ("kraft-finding-disk-loss-illegal-state", "NoIllegalState"),
    ("kraft-finding-disk-loss-after-new-leader", "LeaderCompleteness"),
    ("kraft-ci-witness-end-quorum-epoch", "NoEndQuorumEpochSent"),
    ("kraft-ci-witness-progress-window", "NoPartialProgressWindow"),
    ("kraft-ci-witness-progress-check-passes", "ProgressCheckNeverPasses"),
    ("kraft-ci-witness-5voters-partial-window", "NoPartialProgressWindow"),
])
def test_finding_and_witness_configs_expect_their_violation(name, expect):
    e = find_entry(name, ENTRIES)
    assert e.expect == expect and e.max_trace_length
    assert expect in _invariants(e)


def test_zombie_property_is_checked_in_ci_and_fails_without_the_progress_timer():
    # ci: the 5-voter config, where the majority window decides; the 3-voter config the bug
    # config is cut from is pinned in deep (moved there for the 10-minute ci budget)
    ci = find_entry("kraft-ci-5voters-zombie-leader", ENTRIES)
    three = find_entry("kraft-ci-zombie-leader", ENTRIES)
    bug = find_entry("kraft-bug-no-leader-progress-timeout", ENTRIES)
    assert ci.profile == "ci" and ci.expect == "ok" and ci.distinct_states
    assert "ZombieLeaderStepsDown" in parse_cfg(ci.cfg_path).properties
    assert three.profile == "deep" and three.expect == "ok" and three.distinct_states
    assert "ZombieLeaderStepsDown" in parse_cfg(three.cfg_path).properties
    assert bug.profile == "bugs" and bug.expect == "ZombieLeaderStepsDown"
    assert _spec(three) == "ProgressLiveSpec" and _spec(bug) == "NoProgressTimerLiveSpec"


def test_disk_loss_is_off_outside_the_disk_loss_configs():
    for e in KRAFT:
        text = e.cfg_path.read_text(encoding="utf-8")
        if "DiskLossRejoin" in text and 'DiskLossRejoin = "Never"' not in text:
            assert "disk-loss" in e.name, e.name


@pytest.mark.tlc
def test_disk_loss_counterexample_votes_twice_after_losing_the_disk(tlc_toolchain):
    """The finding's trace: a voter grants a vote of epoch e, comes back empty (epoch 0, no
    vote), grants a second candidate of the same epoch e, and both lead e."""
    r = run_config(find_entry("kraft-finding-disk-loss", ENTRIES), workers=1)
    assert r.violated == "ElectionSafety", r.mismatches
    states = [s.state for s in r.counterexample]
    wiped = [k for k in range(1, len(states)) for n in states[k]["currentEpoch"]
             if states[k - 1]["currentEpoch"][n] > 0 and states[k]["currentEpoch"][n] == 0]
    assert len(wiped) == 1
    last = states[-1]
    leaders = [n for n, r_ in last["role"].items() if r_ == "Leader"]
    assert len({last["currentEpoch"][n] for n in leaders}) == 1 and len(leaders) == 2
