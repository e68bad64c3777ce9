"""KIP-642 reassignment spec (spec/KRaftReassign.tla, tlc_configs/reassign.toml).

tests/test_spec_models.py runs every ci config (exact pinned counts) and every bugs config
(caught by exactly the named invariant) of every manifest, these included.  Here: the catalog is
complete (one bugs config per rule (a)-(g) of issue 12, each switching exactly its rule off), the
reading guide quotes the pinned counts, and the counterexamples of the catalog have the shape
docs/spec-reassignment.md describes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kraftcore.tlc.cfg import parse_cfg
from kraftcore.tlc.manifest import load_manifest
from tlc_memo import config_group, manifest_run

REPO = Path(__file__).resolve().parents[1]
ENTRIES = {e.name: e for e in load_manifest() if e.manifest.endswith("reassign.toml")}
SWITCHES = {
    "a": "BugChangeBeforeEpochCommit", "b": "BugTwoChangesInFlight", "c": "BugActOnCommit",
    "d": "BugNoRevertOnTruncate", "e": "BugPersistUncommitted", "f": "BugVoteForNonVoter",
    "g": "BugMajorityOfTarget",
}
HOOKS = {"VotersOf", "MajorityVotersOf", "VoteFromNonVoter", "NoEndOffsets", "EpochStartRecords"}


BUG_NAME = re.compile(r"reassign-(?:bug|finding)-([a-g])-")
# (f): no safety invariant is violated (docs/spec-reassignment.md §4); its witness config is
# reassign-bug-f-vote-for-non-voter (the rule's own property VotesOnlyForVoters).
SAFE_FINDINGS = {"reassign-finding-f-vote-for-non-voter-safe"}


def _bug_entries():
    """The catalog: the bugs profile, and the deep profile for the rules whose violation is
    found by simulation (docs/spec-reassignment.md §4)."""
    return [e for e in ENTRIES.values() if BUG_NAME.match(e.name)]


def test_manifest_is_the_reassign_protocol():
    assert ENTRIES and {e.protocol for e in ENTRIES.values()} == {"reassign"}
    assert {e.module for e in ENTRIES.values()} == {"spec/MCKRaftReassign.tla",
                                                    "spec/MCKRaftReassignResign.tla"}
    assert {"ci", "bugs", "deep"} <= {e.profile for e in ENTRIES.values()}


def test_one_bug_config_per_rule_each_switching_only_its_rule():
    seen = {}
    for e in _bug_entries():
        m = BUG_NAME.match(e.name)
        if e.name in SAFE_FINDINGS:
            # a rule whose violation breaks no safety invariant: an exhaustive ok run
            assert e.profile == "deep" and e.expect == "ok" and e.distinct_states, e.name
            continue
        assert e.profile in ("bugs", "deep") and e.expect != "ok", e.name
        cfg = parse_cfg(e.cfg_path)
        on = {n for n, v in cfg.constants.items() if n.startswith("Bug") and v is True}
        assert on == {SWITCHES[m.group(1)]}, (e.name, on)
        seen[m.group(1)] = e.name
    assert sorted(seen) == sorted(SWITCHES)


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_every_config_substitutes_the_five_hooks(name):
    cfg = parse_cfg(ENTRIES[name].cfg_path)
    assert set(cfg.substitutions) >= HOOKS
    for hook in HOOKS:
        assert cfg.substitutions[hook].replace(" ", "") == f"[KRaft]Reassign{hook}"


def test_correct_configs_switch_every_rule_on():
    for e in ENTRIES.values():
        if e.expect == "ok" and e.name not in SAFE_FINDINGS:
            cfg = parse_cfg(e.cfg_path)
            assert not [n for n, v in cfg.constants.items() if n.startswith("Bug") and v is True]
            if not e.name.endswith("liveness"):
                assert "VoterSetFollowsLog" in cfg.sections["INVARIANT"], e.name


def test_the_guide_quotes_the_pinned_counts():
    text = (REPO / "docs" / "spec-reassignment.md").read_text(encoding="utf-8")
    for e in ENTRIES.values():
        assert f"`{e.name}`" in text, f"{e.name} is not in docs/spec-reassignment.md"
        if e.distinct_states is not None:
            row = next(ln for ln in text.splitlines() if ln.startswith(f"| `{e.name}`"))
            assert f"{e.distinct_states:,}" in row and f"| {e.depth} |" in row, row


@pytest.mark.tlc
@config_group("reassign-bug-b-two-changes-in-flight")
def test_two_changes_in_flight_counterexample(tlc_toolchain):
    """(b): the leader adds n3 while the addition of n2 is uncommitted, so n1 acts on
    {n1, n2, n3} while n2, which holds every committed record, still acts on {n1}."""
    r = manifest_run("reassign-bug-b-two-changes-in-flight")
    assert r.violated == "VoterSetsDifferByAtMostOne"
    last = r.counterexample[-1]
    assert last.action == "AddVoter"
    sets = {frozenset(v) for v in last.state["voterSet"].values()}
    assert frozenset({"n1", "n2", "n3"}) in sets and frozenset({"n1"}) in sets


@pytest.mark.tlc
@config_group("reassign-bug-e-persist-uncommitted")
def test_persist_uncommitted_counterexample(tlc_toolchain):
    """(e): the quorum-state file records the leader's uncommitted VoterAssignment."""
    r = manifest_run("reassign-bug-e-persist-uncommitted")
    assert r.violated == "VoterSetFollowsLog"
    last = r.counterexample[-1].state
    assert any(qs["offset"] > len(last["ghostCommitted"]) for qs in last["quorumState"].values())


@pytest.mark.tlc
@config_group("reassign-bug-d-no-revert-on-truncate")
def test_no_revert_on_truncate_counterexample(tlc_toolchain):
    """(d): n1's "remove n2" is truncated by n2, leader of epoch 2, which then removes n3; n1,
    which holds every committed record, still acts on {n1, n3} while n2 acts on {n1, n2}."""
    r = manifest_run("reassign-bug-d-no-revert-on-truncate")
    assert r.violated == "VoterSetsDifferByAtMostOne"
    last = r.counterexample[-1]
    assert last.action == "RemoveVoter"
    sets = {n: frozenset(v) for n, v in last.state["voterSet"].items()}
    assert sets["n1"] == {"n1", "n3"} and sets["n2"] == {"n1", "n2"}
    assert any(s.action == "ReceiveFetchResponse" and len(s.state["log"]["n1"]) <
               len(prev.state["log"]["n1"])
               for prev, s in zip(r.counterexample, r.counterexample[1:]))


def _cancel_witness_story(r):
    """The administrator's null request is acknowledged while n1 and one promoted observer are
    committed, and the last committed VoterAssignment is the cancellation: CurrentVoters those
    two, TargetVoters null, appended by ReceiveAlterPartitionReassignmentsRequest after an
    AddVoter."""
    last = r.counterexample[-1].state
    acks = [m for m in last["msgs"] if m["type"] == "AlterPartitionReassignmentsResponse"]
    assert [(m["targetVoters"], m["error"]) for m in acks] == [("NullReplicas", "NONE")]
    assigns = [x["entry"] for x in last["ghostCommitted"] if "currentVoters" in x["entry"]]
    assert assigns[0]["currentVoters"] == {"n1"} and assigns[0]["targetVoters"] == set()
    mid = assigns[-1]["currentVoters"]
    assert len(mid) == 2 and "n1" in mid and assigns[-1]["targetVoters"] == set()
    assert assigns[-2]["currentVoters"] == mid and assigns[-2]["targetVoters"] == {"n1", "n2", "n3"}
    actions = [s.action for s in r.counterexample]
    first_add = actions.index("AddVoter")
    assert "ReceiveAlterPartitionReassignmentsRequest" in actions[first_add:]


@pytest.mark.tlc
@config_group("reassign-ci-witness-cancel")
def test_cancellation_witness_counterexample(tlc_toolchain):
    """KIP-642 §"Cancellation": a null request in the middle of {n1} -> {n1, n2, n3}, after an
    observer's promotion, completes with CurrentVoters = the voters at that time."""
    r = manifest_run("reassign-ci-witness-cancel")
    assert r.violated == "NoCancellationCompletedMidReassignment"
    _cancel_witness_story(r)


@pytest.mark.tlc
@config_group("reassign-ci-witness-resigned-leader-removed")
def test_resigned_leader_removed_by_the_next_leader_in_one_behaviour(tlc_toolchain):
    """Step 6b then step 5 in ONE behaviour: n1, the last RemovingVoter, resigns (it stays a
    voter), n2 leads epoch 2, removes n1 and answers its Fetch with NOT_FOLLOWER.  (The steps
    of ResignWitnessSpec are unnamed in TLC's trace, its Next being Next /\\ the history
    update: the story is read from the states.)"""
    r = manifest_run("reassign-ci-witness-resigned-leader-removed")
    assert r.violated == "NoResignedLeaderToldNotFollower"
    states = [s.state for s in r.counterexample]
    resign = next(k for k in range(1, len(states))
                  if states[k - 1]["role"]["n1"] == "Leader" and states[k]["role"]["n1"] == "Resigned")
    assert states[resign]["resignedLeaders"] == {"n1"}
    assert states[resign]["voterSet"]["n1"] == {"n1", "n2", "n3"}   # it stays a voter

    def removed_n1(st):
        last = st["log"]["n2"][-1]
        return "currentVoters" in last and last["currentVoters"] == {"n2", "n3"}
    remove = next(k for k in range(len(states)) if removed_n1(states[k]))
    assert resign < remove and states[remove]["role"]["n2"] == "Leader"
    assert states[remove]["currentEpoch"]["n2"] == 2
    last = states[-1]
    assert any(m["type"] == "FetchResponse" and m["error"] == "NOT_FOLLOWER" and m["dest"] == "n1"
               and m["src"] == "n2" for m in last["msgs"])
    assert last["voterSet"]["n2"] == {"n2", "n3"}


def test_bootstrap_record_is_only_in_the_reassignment_module():
    """KIP-642 §"Bootstrapping Procedure": the first leader's VoterAssignment is substituted
    into KRaft.tla by the reassignment configs only; KRaft.tla's own hook appends exactly the
    LeaderChange record, so the KIP-595 configs are unchanged."""
    kraft = (REPO / "spec" / "KRaft.tla").read_text(encoding="utf-8")
    assert "EpochStartRecords(l, e) == << [epoch |-> e, value |-> LeaderChange] >>" in kraft
    for path in (REPO / "tlc_configs").glob("kraft-*.cfg"):
        assert "EpochStartRecords" not in path.read_text(encoding="utf-8"), path.name


@pytest.mark.tlc
@config_group("reassign-finding-observer-vote-deadlock")
def test_observer_vote_deadlock_counterexample(tlc_toolchain):
    """The availability finding: growing {n1} -> {n1, n2}, n1 appends "CurrentVoters = {n1, n2}"
    and acts on it at once (step 4), then stops leading before n2 fetched it.  n1 needs n2's
    vote; n2, an observer by its own log, never votes; no Fetch response is in flight, so no
    log can change again: no leader is ever elected."""
    r = manifest_run("reassign-finding-observer-vote-deadlock")
    assert r.violated == "QuorumCanStillElectALeader"
    steps = r.counterexample
    last = steps[-1].state
    assert "Leader" not in last["role"].values()
    assert last["voterSet"]["n1"] == {"n1", "n2"} and last["voterSet"]["n2"] == {"n1"}
    added = last["log"]["n1"][-1]
    assert added["currentVoters"] == {"n1", "n2"} and len(last["log"]["n2"]) < len(last["log"]["n1"])
    assert not any(m["type"] == "FetchResponse" for m in last["msgs"])
    assert "AddVoter" in [s.action for s in steps]
    assert steps[-1].action in ("LeaderProgressTimeout", "Restart")


def test_the_vote_hook_keeps_kip_595_and_the_draft_as_written():
    """KRaft.tla's GrantsVotes hook is KIP-595's rule (observers do not vote); only the cure's
    configs substitute KRaftReassign's AnyReplicaVotes for it."""
    kraft = (REPO / "spec" / "KRaft.tla").read_text(encoding="utf-8")
    assert "GrantsVotes(j) == j \\in ElectorateOf(j)" in kraft
    for path in (REPO / "tlc_configs").glob("*.cfg"):
        subs = parse_cfg(path).substitutions
        if "-cure-" in path.name:
            assert subs["GrantsVotes"].replace(" ", "") == "[KRaft]AnyReplicaVotes", path.name
        else:
            assert "GrantsVotes" not in subs, path.name


def test_the_availability_invariant_is_checked_only_with_every_rule_in_force():
    """QuorumCanStillElectALeader assumes VoterSetFollowsLog (a replica's voter set changes
    only with its log): a config checking it switches no Bug* rule off."""
    users = []
    for e in ENTRIES.values():
        cfg = parse_cfg(e.cfg_path)
        if "QuorumCanStillElectALeader" in cfg.sections.get("INVARIANT", []):
            users.append(e.name)
            assert not [n for n, v in cfg.constants.items() if n.startswith("Bug") and v is True]
    assert set(users) >= {"reassign-finding-observer-vote-deadlock",
                          "reassign-finding-cure-any-replica-votes", "reassign-ci-shrink"}
