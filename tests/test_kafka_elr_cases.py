"""Kafka's own KIP-966 test cases, replayed on the refimpl (refimpl/elr/rules.py and the
controller state machine, refimpl/elr/controller.py).

Sources: apache/kafka `metadata/src/test/java/org/apache/kafka/controller/`
PartitionChangeBuilderTest (testEligibleLeaderReplicas_*, the builder's non-default
`useLastKnownLeaderInBalancedRecovery=false` path, which computes KIP-966's LastKnownELR) and
ReplicationControlManagerTest (testEligibleLeaderReplicas_*).  Kafka's controller keeps only
the last known leader in its LastKnownElr field (docs/refimpl-elr.md "Differences from
Kafka's controller"): where a Kafka test expects LastKnownElr = [b], the refimpl's
`last_known_leader` is b.  Each test names its Kafka case; the expected values are Kafka's.
"""

from __future__ import annotations

import pytest

from refimpl.elr import rules
from refimpl.elr.controller import Controller
from refimpl.elr.messages import (AlterPartitionRequest, BrokerHeartbeatRequest,
                                  BrokerRegistrationRequest)
from refimpl.elr.types import AGGRESSIVE, BALANCED, NO_LEADER, NONE, ElrConfig

F = frozenset


# ------------------------------------------------------------ PartitionChangeBuilderTest

#: (case, isr, elr, lke, proposed, unclean, (isr, elr, lke) wanted), min ISR 3; also fed to
#: Kafka's own PartitionChangeBuilder by tests/test_kafka_elr_harness.py
PCB_ELR_UPDATE_CASES = [
    # testEligibleLeaderReplicas_IsrShrinkBelowMinISR: the removed members join the ELR
    ("IsrShrinkBelowMinISR", "1234", "", "", "12", "", ("12", "34", "")),
    # testEligibleLeaderReplicas_IsrExpandAboveMinISR: ISR back at min ISR empties ELR and LKE
    ("IsrExpandAboveMinISR", "12", "3", "4", "123", "", ("123", "", "")),
    # testEligibleLeaderReplicas_IsrAddNewMemberNotInELR: below min ISR, ELR and LKE stay
    ("IsrAddNewMemberNotInELR", "1", "3", "2", "14", "", ("14", "3", "2")),
    # testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr: out of ELR into LKE
    ("RemoveUncleanShutdownReplicasFromElr", "1", "23", "", "1", "3", ("1", "2", "3")),
    # testEligibleLeaderReplicas_IsrCanShrinkToZero: every member goes to the ELR
    ("IsrCanShrinkToZero", "1234", "", "", "", "", ("", "1234", "")),
]


@pytest.mark.parametrize("case, isr, elr, lke, proposed, unclean, want", PCB_ELR_UPDATE_CASES)
def test_partition_change_builder_elr_update(case, isr, elr, lke, proposed, unclean, want):
    u = rules.elr_update(F(isr), F(elr), F(lke), F(proposed), 3, F(unclean))
    assert (u.isr, u.elr, u.last_known_elr) == tuple(F(x) for x in want), case


def test_partition_change_builder_elr_can_be_elected():
    # testEligibleLeaderReplicas_ElrCanBeElected: ISR {1} ELR {3} LKE {2}, broker 1 offline
    # and target ISR {}: the unfenced ELR member 3 leads with ISR {3}, 1 joins the ELR
    u = rules.elr_update(F("1"), F("3"), F("2"), F(), 3)
    cands = rules.clean_candidates(u.isr, u.elr, F("234"), True)
    assert cands == F("3")
    o = rules.elect_outcome(u.isr, u.elr, u.last_known_elr, "3")
    assert (o.isr, o.elr, o.last_known_elr) == (F("3"), F("1"), F("2"))


def test_partition_change_builder_elect_last_known_leader():
    # testEligibleLeaderReplicas_ElectLastKnownLeader: ISR and ELR empty, last known leader 1
    # acceptable (unclean recovery manager off, unclean election disabled): 1 leads, ISR {1}
    assert rules.last_known_leader_candidates(F(), F(), "1", F("1234"), BALANCED,
                                              manager_enabled=False, elr_enabled=True) == F("1")
    o = rules.elect_outcome(F(), F(), F(), "1")
    assert (o.isr, o.elr, o.last_known_elr) == (F("1"), F(), F())


def test_partition_change_builder_elect_last_known_leader_should_fail():
    # testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail: ELR {3} (fenced) is not
    # empty, so the last known leader 1 is not elected: no change, wait for the ELR member
    eligible = F("124")
    assert rules.clean_candidates(F(), F("3"), eligible, True) == F()
    assert rules.last_known_leader_candidates(F(), F("3"), "1", eligible, BALANCED,
                                              manager_enabled=False, elr_enabled=True) == F()
    assert rules.recovery_decision(BALANCED, False, True, F(), F("3"), F(), eligible) == "WaitForElr"


def test_effective_min_isr_is_capped_by_the_replication_factor():
    # ReplicationControlManagerTest.testEligibleLeaderReplicas_EffectiveMinIsr
    assert rules.effective_min_isr(5, 3) == 3
    assert rules.effective_min_isr(2, 3) == 2


def test_elr_disabled_never_empties_the_isr():
    # PartitionChangeBuilderTest (ELR disabled): the last ISR member stays, no ELR
    u = rules.elr_update(F("1"), F(), F(), F(), 3, elr_enabled=False)
    assert (u.isr, u.elr) == (F("1"), F())


# ------------------------------------------------------- ReplicationControlManagerTest

class Ctl:
    """The controller driven as ReplicationControlManagerTest's context drives Kafka's:
    fenceBrokers (session expiry, one broker a step), unfenceBrokers (heartbeat),
    registration with or without the previous broker epoch (clean / unclean shutdown),
    controlled shutdown, AlterPartition from the leader."""

    bug: str | None = None              # a planted bug (refimpl/bugs.py), for the negative test

    def __init__(self, brokers: str, min_isr: int):
        self.c = Controller(ElrConfig(brokers=tuple(brokers), min_isr=min_isr, bug=self.bug))
        self.s = self.c.initial_registered()
        self.now = 0

    def _apply(self, t):
        assert t is not None
        while t.chain:                   # an unclean election follows as a chained part
            t = t.chain[-1][1]
        self.s = t.state

    @property
    def p(self):
        return self.s.partition

    def fence(self, *bs: str) -> None:
        for b in bs:
            self.now += self.c.config.session_timeout_ms + 1
            for o in sorted(self.s.unfenced):
                if o != b:
                    self._apply(self.c.on_heartbeat(
                        self.s, BrokerHeartbeatRequest(o, self.s.registration(o).broker_epoch),
                        self.now))
            self._apply(self.c.on_session_timer(self.s, self.now))
            assert self.s.registration(b).fenced, b

    def unfence(self, *bs: str) -> None:
        for b in bs:
            self._apply(self.c.on_heartbeat(
                self.s, BrokerHeartbeatRequest(b, self.s.registration(b).broker_epoch), self.now))

    def controlled_shutdown(self, b: str) -> None:
        self._apply(self.c.on_heartbeat(
            self.s, BrokerHeartbeatRequest(b, self.s.registration(b).broker_epoch,
                                           want_shutdown=True), self.now))

    def register(self, b: str, clean: bool) -> None:
        reg = self.s.registration(b)
        self._apply(self.c.on_registration(
            self.s, BrokerRegistrationRequest(b, reg.broker_epoch if clean else -1,
                                              self.s.incarnation(b) + 1), self.now))

    def alter_partition(self, isr: str) -> None:
        p = self.p
        self._apply(self.c.on_alter_partition(
            self.s, AlterPartitionRequest(p.leader, self.s.registration(p.leader).broker_epoch,
                                          p.leader_epoch, p.partition_epoch, F(isr))))


def test_replication_control_broker_fence():
    # testEligibleLeaderReplicas_BrokerFence: RF 4, min ISR 3
    c = Ctl("0123", 3)
    c.fence("2", "3")
    assert (c.p.isr, c.p.elr, c.p.last_known_elr) == (F("01"), F("3"), F())
    c.fence("1")
    assert (c.p.isr, c.p.elr, c.p.last_known_elr) == (F("0"), F("13"), F())
    c.unfence("1", "2", "3")               # ISR changes come from AlterPartition, not here
    assert (c.p.isr, c.p.elr, c.p.leader) == (F("0"), F("13"), "0")


def test_replication_control_clean_election():
    # testEligibleLeaderReplicas_CleanElection: an unfenced ELR member is elected
    c = Ctl("0123", 3)
    c.fence("1", "2", "3")
    assert (c.p.isr, c.p.elr) == (F("0"), F("23"))
    c.unfence("2")
    c.fence("0")
    assert (c.p.leader, c.p.isr, c.p.elr, c.p.last_known_elr) == ("2", F("2"), F("03"), F())


def test_replication_control_unclean_shutdown():
    # testEligibleLeaderReplicas_UncleanShutdown: a registration without the previous broker
    # epoch removes the broker from ELR (and ISR); Kafka's LastKnownElr [0] at the end is the
    # last known leader
    c = Ctl("0123", 3)
    c.fence("1", "2", "3")
    assert (c.p.isr, c.p.elr) == (F("0"), F("23"))
    c.register("3", clean=False)
    assert (c.p.isr, c.p.elr) == (F("0"), F("2"))
    c.register("0", clean=False)
    assert (c.p.leader, c.p.isr, c.p.elr, c.p.last_known_leader) == (NO_LEADER, F(), F("2"), "0")


def test_replication_control_shrink_to_empty_isr():
    # testEligibleLeaderReplicas_ShrinkToEmptyIsr: RF 3, min ISR 3; the controlled shutdown
    # of the last ISR member empties the ISR into the ELR; Kafka's LastKnownElr [0] is the
    # last known leader
    c = Ctl("012", 3)
    c.fence("1", "2")
    assert (c.p.isr, c.p.elr) == (F("0"), F("12"))
    c.controlled_shutdown("0")
    assert (c.p.leader, c.p.isr, c.p.elr, c.p.last_known_leader) == (NO_LEADER, F(), F("012"), "0")


def test_replication_control_shrink_and_expand_isr():
    # testEligibleLeaderReplicas_ShrinkAndExpandIsr: RF 3, min ISR 2, by AlterPartition
    c = Ctl("012", 2)
    c.alter_partition("0")
    assert (c.p.isr, c.p.elr, c.p.last_known_elr) == (F("0"), F("12"), F())
    c.alter_partition("01")
    assert (c.p.isr, c.p.elr, c.p.last_known_elr) == (F("01"), F(), F())


def test_without_the_recovery_manager_only_balanced_waits_for_the_last_known_leader():
    # KIP-966 "Delivery plan": with unclean.leader.election.enable=true (Aggressive) the
    # pre-KIP unclean election runs instead; None waits for the operator
    everyone = F("1234")
    assert rules.recovery_decision(AGGRESSIVE, False, True, F(), F(), F(), everyone) == \
        "UncleanElection"
    assert rules.recovery_decision(NONE, False, True, F(), F(), F(), everyone) == \
        "WaitForOperator"


_RCM_CASES = (test_replication_control_broker_fence, test_replication_control_clean_election,
              test_replication_control_unclean_shutdown, test_replication_control_shrink_to_empty_isr,
              test_replication_control_shrink_and_expand_isr)


@pytest.mark.parametrize("bug, caught_by", [
    ("elr-not-cleared-at-min-isr", "test_replication_control_shrink_and_expand_isr"),
    ("unclean-broker-kept-in-elr", "test_replication_control_unclean_shutdown"),
    ("leader-from-fenced-elr", "test_replication_control_clean_election"),
])
def test_the_kafka_cases_catch_planted_controller_bugs(monkeypatch, bug, caught_by):
    # the cases above can fail: each planted bug breaks at least the named Kafka case
    monkeypatch.setattr(Ctl, "bug", bug)
    failed = set()
    for case in _RCM_CASES:
        try:
            case()
        except AssertionError:
            failed.add(case.__name__)
    assert caught_by in failed, failed
