"""KIP-966's own scenarios, scripted on the pure state machines (refimpl/elr/scenario.py), with
the online invariants checked after every step."""

from __future__ import annotations

import random
from dataclasses import replace

from refimpl.elr.adapter import ELRAdapter
from refimpl.elr.broker import Broker, BrokerState, FollowerProgress
from refimpl.elr.controller import Controller
from refimpl.elr.log import ReplicaLog
from refimpl.elr.messages import (BrokerHeartbeatRequest, BrokerRegistrationRequest, FetchRequest,
                                  GetReplicaLogInfoRequest, GetReplicaLogInfoResponse,
                                  PartitionMetadata)
from refimpl.elr.scenario import Cluster
from refimpl.elr.types import NO_LEADER, ElrConfig, LogEntry


def _last_replica_standing(elr_enabled: bool) -> Cluster:
    """KIP-966 "Motivation": ISR (0,1,2) = (b1,b2,b3), min ISR 2, acks=all records written.
    T0 b1 is partitioned away (out of ISR); T1 b2 too, b3 leads alone; T2 b3 has an unclean
    shutdown losing its unflushed log; T3 the partitions heal; T4 b3 restarts."""
    c = Cluster(ElrConfig(elr_enabled=elr_enabled))
    c.run_for(300)
    for v in ("v1", "v2", "v3"):
        c.produce(v)
        c.run_for(200)
    assert c.acked() == ("v1", "v2", "v3")
    c.isolate("b1")                                   # T0
    c.run_for(1500)
    c.isolate("b2")                                   # T1
    c.run_for(1500)
    assert c.partition.leader == "b3" and c.partition.isr == {"b3"}
    c.crash("b3", power_loss=True)                    # T2
    c.run_for(1500)
    c.heal()                                          # T3
    c.run_for(1500)
    c.restart("b3")                                   # T4
    c.run_for(1500)
    c.produce("v4")
    c.run_for(500)
    return c


def test_last_replica_standing_with_elr_keeps_the_acked_records():
    c = _last_replica_standing(elr_enabled=True)
    assert c.violations == []
    assert c.partition.leader == "b2"                 # elected from the ELR at T3
    for b in ("b1", "b2", "b3"):
        assert c.log(b)[:3] == ("v1", "v2", "v3")
    assert c.acked() == ("v1", "v2", "v3", "v4")
    # T1: b2 entered the ELR; T2: fencing b3 moved it there too, and recorded it as the
    # LastKnownLeader; T4: its unclean registration removed it from the ELR.
    regs = [s for s in c.steps if s.params.get("step") == "HandleBrokerRegistration"
            and s.params.get("broker") == "b3"]
    assert regs and regs[-1].params["clean"] is False
    # the registration is part of the one RestartBroker step (spec A8)
    start = c.steps.index(regs[-1]) - 1
    assert c.steps[start].action == "RestartBroker" and regs[-1].action is None


def test_last_replica_standing_without_elr_loses_the_acked_records():
    c = _last_replica_standing(elr_enabled=False)
    assert c.partition.leader == "b3"                 # the last ISR member came back
    assert c.log("b1")[:3] != ("v1", "v2", "v3")      # followers truncated: global data loss
    assert "NoAckedRecordLost" in c.violated()
    assert "HighWatermarkMonotonic" in c.violated()


def test_elr_membership_through_the_motivation_timeline():
    c = Cluster(ElrConfig())
    c.run_for(300)
    c.produce("v1")
    c.run_for(300)
    c.isolate("b1")
    c.run_for(1500)
    assert (c.partition.isr, c.partition.elr) == ({"b2", "b3"}, set())   # rule 1: >= min ISR
    c.isolate("b2")
    c.run_for(1500)
    assert (c.partition.isr, c.partition.elr) == ({"b3"}, {"b2"})        # rule 2b
    c.crash("b3", power_loss=True)
    c.run_for(1500)
    p = c.partition
    assert (p.leader, p.isr, p.elr, p.last_known_leader) == (NO_LEADER, set(), {"b2", "b3"}, "b3")
    c.restart("b3")
    c.run_for(400)
    assert "b3" not in c.partition.elr and "b3" in c.partition.last_known_elr
    assert c.violations == []


def test_clean_shutdown_keeps_the_broker_in_the_elr():
    c = Cluster(ElrConfig())
    c.run_for(300)
    c.produce("v1")
    c.run_for(300)
    c.clean_shutdown("b2")
    c.run_for(600)
    c.clean_shutdown("b3")
    c.run_for(600)
    # b2 left while the ISR stayed at min ISR (rule 1), b3 when it dropped below (rule 2b)
    assert (c.partition.isr, c.partition.elr) == ({"b1"}, {"b3"})
    assert c.disks["b3"]["clean_shutdown"] == 1        # the CleanShutdownFile's broker epoch
    c.isolate("b1")                                    # keep b1 from re-adding b3 at once
    c.restart("b3")
    c.run_for(60)
    reg = [s for s in c.steps if s.params.get("step") == "HandleBrokerRegistration"][-1]
    assert reg.params["clean"] is True
    assert "b3" in c.partition.elr                     # a clean registration stays eligible
    assert c.violations == []


def test_min_isr_change_clears_the_elr():
    c = Cluster(ElrConfig())
    c.run_for(300)
    c.isolate("b2")
    c.isolate("b3")
    c.run_for(1500)
    assert c.partition.isr == {"b1"} and len(c.partition.elr) == 1
    c.heal()
    c.alter_min_isr(1)
    assert c.partition.elr == set()
    assert c.violations == []


def test_spec_finding_1_min_isr_lowered_while_leaderless():
    """docs/spec-elr.md §8 finding 1, reproduced on the refimpl: b2, b3, b1 shut down cleanly
    (ISR {}, ELR {b1, b3}); min.insync.replicas := 1 keeps the ELR (ISR size 0 < 1); b1
    restarts and is elected from the ELR (ISR {b1}) and b3 stays in the ELR although the ISR
    meets min ISR: KIP-966 re-applies no rule 1 after an ELR election, nor does the spec."""
    c = Cluster(ElrConfig(min_isr_choices=(1, 2)))
    c.run_for(300)
    for b in ("b2", "b3", "b1"):
        c.clean_shutdown(b)
        c.run_for(100)
    assert (c.partition.leader, c.partition.isr, c.partition.elr) == \
        (NO_LEADER, set(), {"b1", "b3"})
    c.alter_min_isr(1)
    assert c.partition.elr == {"b1", "b3"} and c.violations == []
    c.restart("b1")
    assert (c.partition.leader, c.partition.isr, c.partition.elr) == ("b1", {"b1"}, {"b3"})
    assert c.violated() == {"NonEmptyElrImpliesIsrBelowMinIsr"}


def test_hwm_waits_for_the_controller_to_commit_the_expanded_isr():
    """KIP-966's 3-replica example on the leader state machine: ISR=[b1] (ELR=[b2]), b3 caught
    up and is being added (maximal ISR [b1, b3]): no HWM advance until the ISR is committed."""
    cfg = ElrConfig()
    log = ReplicaLog(tuple(LogEntry(1, f"v{i}") for i in range(5)))
    md = PartitionMetadata(1, "b1", 1, 7, frozenset({"b1"}), 2, version=3,
                           live_brokers=frozenset({("b1", 1, 0), ("b3", 1, 0)}))
    leader = BrokerState("b1", 0, -1, broker_epoch=1, log=log, hwm=2, metadata=md,
                         pending_isr=frozenset({"b1", "b3"}),
                         followers=(("b3", FollowerProgress(1, 4, 0)),))
    fetch = FetchRequest("b3", 1, 1, 5, 1)
    t = Broker(cfg).on_fetch(leader, "b3", fetch, 10)
    assert t.state.hwm == 2                              # committed ISR [b1] < min ISR 2
    t_bug = Broker(replace(cfg, bug="hwm-on-maximal-isr")).on_fetch(leader, "b3", fetch, 10)
    assert t_bug.state.hwm == 5                          # the pre-KIP maximal-ISR rule
    committed = replace(md, partition_epoch=8, isr=frozenset({"b1", "b3"}), version=4)
    t2 = Broker(cfg).on_message(t.state, "ctrl", committed, 11)
    assert t2.state.hwm == 5


def test_unclean_registration_removes_the_broker_and_a_stale_epoch_counts_as_unclean():
    ctrl = Controller(ElrConfig())
    s = ctrl.initial_registered()
    # b2 and b3 fenced: ISR {b1}, ELR {b2, b3}
    s = replace(s, registrations=tuple(replace(r, fenced=r.broker_id != "b1")
                                       for r in s.registrations),
                partition=s.partition.with_(isr=frozenset({"b1"}), elr=frozenset({"b2", "b3"})))
    t = ctrl.on_registration(s, BrokerRegistrationRequest("b2", 1, 1), 5)    # clean: epoch 1
    assert t.params["clean"] and "b2" in t.state.partition.elr
    t = ctrl.on_registration(t.state, BrokerRegistrationRequest("b3", 7, 1), 6)  # stale epoch
    p = t.state.partition
    assert not t.params["clean"] and "b3" not in p.elr and "b3" in p.last_known_elr
    # registered and unfenced in one step (spec A8); the old incarnation's fencing counted
    reg = t.state.registration("b3")
    assert (reg.broker_epoch, reg.fenced) == (2, False)
    assert t.sends[0].payload.metadata.live("b3") == ("b3", 2, reg.fence_epoch)


def test_controller_restart_replays_its_metadata():
    c = Cluster(ElrConfig())
    c.run_for(300)
    c.isolate("b3")
    c.run_for(1500)
    before = c.partition
    c.crash("ctrl")
    c.restart("ctrl")
    assert c.partition == before
    c.heal()
    c.run_for(1500)
    assert c.partition.isr == {"b1", "b2", "b3"} and c.violations == []


# --------------------------------------------------------------------------- log and disk

def _log(*epochs: int) -> ReplicaLog:
    return ReplicaLog(tuple(LogEntry(e, f"v{i}") for i, e in enumerate(epochs)))


def test_power_loss_keeps_only_the_flushed_prefix_and_is_counted():
    a = ELRAdapter(ElrConfig())                       # min ISR 2: one power loss tolerated
    log = replace(_log(1, 1, 1, 2), flushed=2)
    d1 = a.unclean_shutdown("b1", {"log": log}, random.Random(0))
    assert d1["log"].entries == log.entries[:2] and d1["ghost_unclean_shutdowns"] == 1
    d2 = a.unclean_shutdown("b2", {"log": log}, random.Random(0))
    assert d2["log"] == log and d2["ghost_unclean_shutdowns"] == 1    # past the budget: a crash
    d3 = a.plain_crash("b3", {"log": log, "ghost_unclean_shutdowns": 1})
    assert d3["log"] == log and d3["ghost_unclean_shutdowns"] == 2
    assert a.plain_crash("client", {}) == {} and a.unclean_shutdown("ctrl", {}, None) == {}


def test_data_loss_is_counted_at_the_restart_as_the_spec_does():
    """spec RestartBroker: lostCommitted[b] gains the committed records b held and the restart
    did not keep (k < held); the log recovery flushes what survived (flushed' = k).  spec
    FollowerFetch: once b fetched them back it has caught up and no longer counts
    (WithinTolerance counts only brokers still missing committed data)."""
    c = Cluster(ElrConfig())
    c.run_for(300)
    c.produce("v1")
    c.run_for(300)
    assert c.log("b2") == ("v1",) and c.states["b2"].log.flushed == 0
    committed = c._world.history["committed"]
    assert len(committed) == 1                                    # v1 is committed
    c.crash("b2", power_loss=True)
    assert "ghost_lost_committed" not in c.disks["b2"]            # not at the crash
    c.run_for(100)
    c.restart("b2")
    assert c.disks["b2"]["ghost_lost_committed"] == frozenset({(0, committed[0])})
    assert c.states["b2"].log.flushed == c.states["b2"].log.end_offset
    (lost,) = c.adapter.project(c._world)["lostCommitted"]["b2"]     # spec offset 1
    assert lost[0] == 1 and dict(lost[1].items()) == {"epoch": 1, "value": "v1"}
    c.run_for(300)
    assert c.adapter.project(c._world)["lostCommitted"]["b2"] == frozenset()  # fetched back
    assert c.log("b2") == ("v1",)
    assert c.violations == []


def test_log_epoch_lookups():
    log = _log(1, 1, 3, 3, 4)
    assert log.end_offset_for_epoch(3) == (3, 4)
    assert log.end_offset_for_epoch(2) == (1, 2)
    assert log.end_offset_for_epoch(0) == (0, 0)
    assert log.matches(0, 0) and log.matches(4, 3) and not log.matches(4, 4)
    assert not log.matches(9, 4)
    assert log.truncate(3).flushed == 0 and log.flush().truncate(3).flushed == 3


def test_follower_truncates_a_divergent_suffix_then_copies_the_leader():
    cfg = ElrConfig()
    md_leader = PartitionMetadata(1, "b1", 5, 9, frozenset({"b1", "b2"}), 2)
    leader = BrokerState("b1", 0, -1, broker_epoch=1, log=_log(1, 1, 3, 5), hwm=2,
                         metadata=md_leader)
    md_follower = replace(md_leader, broker_epoch=1)
    follower = BrokerState("b2", 0, -1, broker_epoch=1, log=_log(1, 1, 4, 4), hwm=2,
                           metadata=md_follower)
    br = Broker(cfg)
    fetch = FetchRequest("b2", 1, 5, follower.log.end_offset, follower.log.last_epoch)
    resp = br.on_fetch(leader, "b2", fetch, 0).sends[0].payload
    assert resp.diverging_epoch == 3 and resp.diverging_end_offset == 3
    t = br.on_fetch_response(follower, "b1", resp, 1)
    assert t.state.log.end_offset == 2                 # min(leader's end for epoch 3, own)
    fetch = FetchRequest("b2", 1, 5, 2, 1)
    t2 = br.on_fetch(leader, "b2", fetch, 2)
    t3 = br.on_fetch_response(t.state, "b1", t2.sends[0].payload, 3)
    assert t3.state.log.entries == leader.log.entries


# --------------------------------------------------------------------------- unclean recovery

def _leaderless(strategy: str, lke: frozenset, unfenced: frozenset, **kw):
    """A controller whose partition lost its ISR and ELR (LastKnownELR `lke`)."""
    ctrl = Controller(ElrConfig(strategy=strategy, **kw))
    s = ctrl.initial_registered()
    s = replace(s, registrations=tuple(replace(r, fenced=r.broker_id not in unfenced)
                                       for r in s.registrations),
                partition=s.partition.with_(leader=NO_LEADER, isr=frozenset(), elr=frozenset(),
                                            last_known_elr=lke))
    return ctrl, s


def _info(b, epoch=1, last=1, cur=1, leo=3):
    return GetReplicaLogInfoResponse(b, epoch, last, cur, leo)


def test_balanced_recovery_waits_for_every_last_known_elr_member():
    ctrl, s = _leaderless("Balanced", frozenset({"b1", "b2"}), frozenset({"b2", "b3"}))
    # b1 (LastKnownELR) is fenced: Balanced waits (election order 4b)
    t = ctrl.on_heartbeat(s, BrokerHeartbeatRequest("b3", 1), 10)
    assert t.params["election"] == "WaitForLastKnownElr" and t.state.recovery is None
    # b1 comes back: the recovery starts and asks every unfenced replica
    t = ctrl.on_heartbeat(t.state, BrokerHeartbeatRequest("b1", 1), 20)
    assert t.params["election"] == "UncleanRecovery"
    asked = {e.dst for e in t.sends if isinstance(e.payload, GetReplicaLogInfoRequest)}
    assert asked == {"b1", "b2", "b3"}
    s = t.state
    t = ctrl.on_log_info(s, _info("b2", leo=5))
    t = ctrl.on_log_info(t.state, _info("b3", leo=9, last=0))
    assert t.state.partition.leader == NO_LEADER        # b1 has not replied yet
    rejected = ctrl.on_log_info(t.state, _info("b1", epoch=9))       # stale broker epoch
    assert rejected.action == "RejectGetReplicaLogInfoResponse"
    rejected = ctrl.on_log_info(t.state, _info("b1", cur=0))         # stale leader epoch
    assert rejected.action == "RejectGetReplicaLogInfoResponse"
    t = ctrl.on_log_info(t.state, _info("b1", leo=4))
    assert t.action == "HandleGetReplicaLogInfoResponse"   # spec SendReplicaLogInfo, then
    (_, t), = t.chain                                       # CompleteUncleanRecovery
    p = t.state.partition
    assert t.action == "UncleanRecoveryElect"
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == ("b2", {"b2"}, set(), set())
    assert p.leader_epoch == 2 and t.state.unclean_elections == 1


def test_aggressive_recovery_elects_after_the_timeout():
    ctrl, s = _leaderless("Aggressive", frozenset({"b1"}), frozenset({"b2", "b3"}))
    t = ctrl.on_heartbeat(s, BrokerHeartbeatRequest("b2", 1), 10)
    assert t.params["election"] == "UncleanRecovery"
    t = ctrl.on_log_info(t.state, _info("b3", leo=2))
    assert t.state.partition.leader == NO_LEADER        # b2 may still answer
    t = ctrl.on_recovery_timer(t.state, 600)
    assert t.action == "UncleanRecoveryElect" and t.state.partition.leader == "b3"


def test_strategy_none_waits_for_the_operator():
    ctrl, s = _leaderless("None", frozenset(), frozenset({"b1", "b2", "b3"}))
    t = ctrl.on_heartbeat(s, BrokerHeartbeatRequest("b1", 1), 10)
    assert t.params["election"] == "WaitForOperator" and t.state.partition.leader == NO_LEADER


def test_pre_kip_unclean_leader_election_and_last_known_leader():
    ctrl, s = _leaderless("Aggressive", frozenset(), frozenset({"b2"}), elr_enabled=False)
    s = replace(s, partition=s.partition.with_(isr=frozenset({"b1"})))
    t = ctrl.on_heartbeat(s, BrokerHeartbeatRequest("b2", 1), 10)
    assert t.params["election"] == "UncleanElection" and t.state.partition.leader == NO_LEADER
    (_, e), = t.chain                          # the election: spec UncleanLeaderElection
    assert e.action == "UncleanLeaderElect" and e.state.partition.isr == {"b2"}
    # phase 1 (no recovery manager), Balanced: wait for the LastKnownLeader, then elect it
    ctrl, s = _leaderless("Balanced", frozenset(), frozenset({"b2"}), manager_enabled=False)
    s = replace(s, partition=s.partition.with_(last_known_leader="b1"))
    t = ctrl.on_heartbeat(s, BrokerHeartbeatRequest("b2", 1), 10)
    assert t.params["election"] == "WaitForLastKnownLeader"
    t = ctrl.on_heartbeat(t.state, BrokerHeartbeatRequest("b1", 1), 20)
    p = t.state.partition
    assert (p.leader, p.isr, p.last_known_leader) == ("b1", {"b1"}, NO_LEADER)
