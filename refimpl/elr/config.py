"""Building an ElrConfig from a TLC configuration (bounded mode) or from defaults.

`kraftcheck simulate --protocol elr --bounds tlc_configs/elr-*.cfg` passes the parsed CONSTANT
section (refimpl.sim.bounds.Bounds); spec/ELR.tla's constants set the cluster and the bounds,
so the simulator explores inside the same finite model TLC checks:

    Brokers, Values, InitMinIsr, MinIsrValues, ElrEnabled, UncleanRecoveryEnabled,
    RecoveryStrategy, FenceRunningBrokers            -> the cluster and topic configuration
    LeaderCacheIsrEligibility                        -> the projection of a broker's view (its
                                                        broker registrations; the refimpl's
                                                        leader always checks them)
    FetchTriggeredIsrExpand                          -> the trace's steps: a fetch round with
                                                        the leader's proposal is one
                                                        ProposeIsrExpand step (the refimpl's
                                                        leader always proposes in the fetch)
    SyncMetadata = TRUE                              -> rejected (the refimpl is asynchronous)
    (and the producer follows the spec's abstraction A7: acks=all while the ISR has min ISR
    members, acks=1 otherwise)
    MaxLogLen, MaxLeaderEpoch, MaxBrokerEpoch, MaxPartitionEpoch,
    MaxUncleanShutdowns                              -> the bounds (each one
                                                        disables the refimpl step it guards)
    MaxRestarts                                      -> the simulator's restart limit
    BugHwmOnMaximalIsr, BugKeepUncleanInElr, BugBalancedFixedReplies,
    BugLastKnownElrLiteral, BugSkipPartitionEpochCheck, BugHwmOnPendingIsr,
    BugStaleLeaderAcks = TRUE,
    BugSkipElrRule = "1"                             -> the matching planted bug (recorded as
                                                        the run's bug: trace header, trace
                                                        id, manifest `planted_bug`)
"""

from __future__ import annotations

from typing import Any

from refimpl.bugs import bugs_for, get_bug

from .types import BALANCED, STRATEGIES, ElrConfig

__all__ = ["config_from_bounds", "SPEC_BUGS", "KAFKA_READINGS"]

SKIP_ELR_RULE_1 = get_bug("elr-not-cleared-at-min-isr").name

#: spec bug switch -> the refimpl's planted bug (its `spec_switch` in refimpl/bugs.py); the spec
#: switches with no refimpl twin are rejected when TRUE: the refimpl cannot reproduce them.
#: BugSkipElrRule is not a boolean switch: "1" selects SKIP_ELR_RULE_1 (below).
SPEC_BUGS: dict[str, str | None] = {
    **{b.spec_switch: b.name for b in bugs_for("elr") if b.spec_switch is not None},
    "BugHwmIgnoresMinIsr": None,
    "BugAcceptStaleReplies": None,
    "BugLongestLogIgnoresEpoch": None,
}


#: spec/ELR.tla's switches modelling Apache Kafka's controller (docs/kafka-conformance.md): the
#: refimpl follows the KIP, so a config with one of them TRUE is refused here; Kafka's own
#: controller runs them (kafka_bridge/elr.py, `kafka=True`).
KAFKA_READINGS = ("KafkaLeaderlessEpochBump", "KafkaLastKnownLeader", "KafkaMinIsrClearsElr",
                  "KafkaRegistersFenced")


def _names(v: Any) -> tuple[str, ...]:
    return tuple(sorted(v, key=lambda x: (len(str(x)), str(x))))


def config_from_bounds(bounds: Any | None, bug: str | None,
                       kafka: bool = False) -> tuple[ElrConfig, dict]:
    """(config, simulator limits) for `bounds` (None: the defaults) and planted `bug`;
    `kafka`: the run is Kafka's controller (kafka_bridge), which may run KAFKA_READINGS."""
    if bug is not None and get_bug(bug).protocol != "elr":
        raise ValueError(f"planted bug {bug!r} belongs to protocol {get_bug(bug).protocol!r}")
    kw: dict[str, Any] = {}
    if bounds is not None:
        k = bounds.constants
        if "Brokers" in k:
            kw["brokers"] = _names(k["Brokers"])
        if "Values" in k:
            kw["values"] = _names(k["Values"])
        if "InitMinIsr" in k:
            kw["min_isr"] = bounds.int("InitMinIsr")
        if "MinIsrValues" in k:
            kw["min_isr_choices"] = tuple(sorted(int(x) for x in k["MinIsrValues"]))
        if "ElrEnabled" in k:
            kw["elr_enabled"] = bounds.bool("ElrEnabled")
        if "UncleanRecoveryEnabled" in k:
            kw["manager_enabled"] = bounds.bool("UncleanRecoveryEnabled")
        if "RecoveryStrategy" in k:
            if k["RecoveryStrategy"] not in STRATEGIES:
                raise ValueError(f"{bounds.where('RecoveryStrategy')}: unknown RecoveryStrategy "
                                 f"{k['RecoveryStrategy']!r}")
            kw["strategy"] = k["RecoveryStrategy"]
        if "FenceRunningBrokers" in k:
            kw["fence_running_brokers"] = bounds.bool("FenceRunningBrokers")
        if "LeaderCacheIsrEligibility" in k:
            kw["view_registrations"] = bounds.bool("LeaderCacheIsrEligibility")
        if "FetchTriggeredIsrExpand" in k:
            kw["fetch_triggered_expand"] = bounds.bool("FetchTriggeredIsrExpand")
        if bounds.bool("SyncMetadata", False):
            # the refimpl is asynchronous (metadata, AlterPartition and fetches travel the
            # network): its traces are steps of the SyncMetadata = FALSE spec only
            raise ValueError(f"{bounds.where('SyncMetadata')}: SyncMetadata = TRUE (the spec's "
                             "synchronous-propagation abstraction) has no refimpl twin; "
                             "simulate under a SyncMetadata = FALSE config")
        kw["acks_policy"] = "spec"          # spec abstraction A7
        for const, f in (("MaxLogLen", "max_log_len"), ("MaxLeaderEpoch", "max_leader_epoch"),
                         ("MaxBrokerEpoch", "max_broker_epoch"),
                         ("MaxPartitionEpoch", "max_partition_epoch"),
                         ("MaxUncleanShutdowns", "max_unclean_shutdowns")):
            if const in k:
                kw[f] = bounds.int(const)
        for const, planted in SPEC_BUGS.items():
            if bounds.bool(const, False):
                if planted is None:
                    raise ValueError(f"{bounds.where(const)}: {const} = TRUE has no refimpl twin")
                if bug is not None and bug != planted:
                    raise ValueError(f"{bounds.where(const)}: {const} = TRUE selects the "
                                     f"planted bug {planted!r}, not {bug!r}")
                bug = planted
        for const in KAFKA_READINGS:
            if bounds.bool(const, False) and not kafka:
                raise ValueError(f"{bounds.where(const)}: {const} = TRUE models Apache Kafka's "
                                 "controller, not the refimpl: simulate it with --impl kafka")
        skip = k.get("BugSkipElrRule", "off")
        if skip != "off":
            if skip != "1":
                raise ValueError(f"{bounds.where('BugSkipElrRule')}: BugSkipElrRule = {skip!r} has "
                                 "no refimpl twin")
            if bug is not None and bug != SKIP_ELR_RULE_1:
                raise ValueError(f"{bounds.where('BugSkipElrRule')}: BugSkipElrRule = \"1\" "
                                 f"selects the planted bug {SKIP_ELR_RULE_1!r}, not {bug!r}")
            bug = SKIP_ELR_RULE_1
    limits: dict[str, Any] = {}
    if bounds is not None and "MaxRestarts" in bounds.constants:
        limits["max_restarts"] = bounds.int("MaxRestarts")   # enforced by the simulator
    if bug == "balanced-fixed-replies":
        kw.setdefault("strategy", BALANCED)
    return ElrConfig(bug=bug, **kw), limits
