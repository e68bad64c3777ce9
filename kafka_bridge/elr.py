"""`kraftcheck simulate --impl kafka --protocol elr`: Apache Kafka's KIP-966 controller
(kafka_harness/elr: ReplicationControlManager, ClusterControlManager,
ConfigurationControlManager, PartitionChangeBuilder of the kafka-metadata jar) driven by the
refimpl's brokers.

Why the refimpl's brokers (kafka_harness/elr/README.md): Kafka's controller decides nothing
without a broker side (fetches, HWM, logs, the CleanShutdownFile), and spec/ELR.tla's safety
invariants are about the brokers' logs; the refimpl's brokers (refimpl/elr/broker.py) are the
ones already validated against the spec, so a run observes every spec variable (full
observation, the checker's graph and neighbourhood modes stay usable) while every decision of
the controller -- registration with the previous broker epoch (clean / unclean), fencing,
unfencing, controlled shutdown, AlterPartition, min.insync.replicas changes, every election --
is Kafka's, taken by Kafka's code on Kafka's own records, which the harness replays.

The Java side is stateless per request (`serve` mode: the controller state travels with each
command, kafka_harness/elr/README.md), so `KafkaElrController` stays a pure state machine like
the refimpl's `Controller` it replaces, and one JVM serves every seed of a run; answers are
memoised by command.

Projection of Kafka's partition record onto spec/ELR.tla's controller variables (the rest of
the projection is refimpl/elr/spec_mapping.py's, unchanged):
  leader          PartitionRegistration.leader (-1 -> NoBroker)
  leaderEpoch     PartitionRegistration.leaderEpoch + 1 (Kafka creates the topic in epoch 0,
                  the spec starts at 1)
  partitionEpoch  PartitionRegistration.partitionEpoch
  isr, elr        PartitionRegistration.isr, .elr
  lastKnownLeader PartitionRegistration.lastKnownElr when it holds one broker: Kafka's
                  controller runs with useLastKnownLeaderInBalancedRecovery = true, so the
                  field holds the last known leader (docs/kafka-conformance.md, D2)
  lastKnownElr    {} (Kafka keeps no KIP LastKnownELR in that mode)
  brokerEpoch, fenced  BrokerRegistration.epoch(), .fenced()
  minIsr          the topic config min.insync.replicas
Broker ids: the i-th broker of Brokers is Kafka broker i (0-based; the first is the preferred
leader, as the spec's replica order).
"""

from __future__ import annotations

import atexit
import json
import re
import subprocess
from dataclasses import dataclass, replace
from typing import Any

from refimpl.elr import controller as rc
from refimpl.elr.adapter import ELRAdapter
from refimpl.elr.config import config_from_bounds
from refimpl.elr.messages import (AlterMinIsrRequest, AlterPartitionRequest,
                                  AlterPartitionResponse, BrokerHeartbeatRequest,
                                  BrokerHeartbeatResponse,
                                  BrokerRegistrationRequest, BrokerRegistrationResponse)
from refimpl.elr.invariants import ElrMonitor
from refimpl.elr.types import NO_LEADER, BrokerRegistration, ElrConfig
from refimpl.sim.protocol import Envelope, Monitor, Transition
from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.cfg import parse_cfg as read_tlc_cfg

from kafka_bridge.toolchain import HarnessError, find_harness

__all__ = ["IMPL", "PROTOCOL", "ElrHarness", "KafkaControllerState", "KafkaElrController",
           "KafkaELRAdapter", "JudgeMonitor", "to_kafka", "from_kafka", "harness"]

IMPL = "kafka"
PROTOCOL = "elr"
#: the spec's AlterPartition errors (spec/ELR.tla AlterPartitionErrors)
SPEC_ERRORS = ("NONE", "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "INELIGIBLE_REPLICA")


class ElrHarness:
    """One `java -jar kafka-harness-elr.jar serve` process: `call(cmd)` sends one JSON command
    and returns Kafka's answer; a fault of the harness is a HarnessError naming it."""

    def __init__(self):
        self.h = find_harness("elr")
        try:
            self.p = subprocess.Popen(self.h.command("serve"), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, encoding="utf-8")
        except OSError as e:
            raise HarnessError(f"cannot start the Kafka ELR harness ({self.h.java}): "
                               f"{e.strerror or e}") from None
        self.memo: dict[str, str] = {}     # command line -> answer line
        self.calls = 0
        self.version = self.call({"op": "version"})["version"]

    def call(self, cmd: dict) -> dict:
        line = json.dumps(cmd, sort_keys=True, separators=(",", ":"))
        hit = self.memo.get(line)
        if hit is not None:
            return json.loads(hit)          # a fresh object: callers may change theirs
        self.calls += 1
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
            out = self.p.stdout.readline()
        except (BrokenPipeError, OSError):
            out = ""
        if not out:
            err = self.p.stderr.read() if self.p.poll() is not None else ""
            raise HarnessError(f"the Kafka ELR harness ({self.h.jar.name} serve) stopped: "
                               f"{(err.strip().splitlines() or ['no message'])[-1]}")
        ans = json.loads(out)
        if not ans.get("ok"):
            raise HarnessError(f"the Kafka ELR harness refused {cmd.get('op')!r}: "
                               f"{ans.get('fault')}")
        if len(self.memo) < 200_000:
            self.memo[line] = out
        return ans

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()


_HARNESS: ElrHarness | None = None


def harness() -> ElrHarness:
    """The process-wide harness (started on first use, stopped at exit)."""
    global _HARNESS
    if _HARNESS is None or _HARNESS.p.poll() is not None:
        _HARNESS = ElrHarness()
        atexit.register(_HARNESS.close)
    return _HARNESS


# ------------------------------------------------------------------------- projection

@dataclass(frozen=True)
class KafkaControllerState(rc.ControllerState):
    """The refimpl controller's state plus what only Kafka's partition record has: the
    LeaderRecoveryState (RECOVERING after an election of the last known leader)."""

    recovering: bool = False
    # brokers fenced while marked in controlled shutdown (a clean shutdown's registration
    # until the broker registers again; spec: fenced)
    in_controlled_shutdown: frozenset[str] = frozenset()


def _ids(config: ElrConfig) -> dict[str, int]:
    return {b: i for i, b in enumerate(config.brokers)}


def to_kafka(s: rc.ControllerState) -> dict:
    """The harness's state JSON (kafka_harness/elr/README.md) of a controller state."""
    c = s.config
    ids = _ids(c)
    p = s.partition
    return {
        "replicas": [ids[b] for b in c.brokers], "minIsr": s.min_isr,
        "elrEnabled": c.elr_enabled,
        "uncleanElection": (not c.manager_enabled and c.strategy == "Aggressive"),
        "regs": [{"id": ids[r.broker_id], "epoch": r.broker_epoch, "fenced": r.fenced,
                  "inControlledShutdown": r.broker_id in getattr(s, "in_controlled_shutdown", ())}
                 for r in s.registrations],
        "part": {"leader": ids[p.leader] if p.leader != NO_LEADER else -1,
                 "leaderEpoch": p.leader_epoch - 1, "partitionEpoch": p.partition_epoch,
                 "isr": sorted(ids[b] for b in p.isr), "elr": sorted(ids[b] for b in p.elr),
                 "lastKnownElr": [] if p.last_known_leader == NO_LEADER
                 else [ids[p.last_known_leader]],
                 "recovering": getattr(s, "recovering", False)},
    }


class ProjectionError(HarnessError):
    """Kafka's state has no spec counterpart (named): a finding, never silently dropped."""


def from_kafka(s: rc.ControllerState, k: dict, now_ms: int | None = None,
               touched: str | None = None) -> KafkaControllerState:
    """Kafka's state `k` onto the refimpl controller state `s` (registrations keep their
    session bookkeeping; `touched` got a heartbeat at now_ms)."""
    c = s.config
    name = dict(enumerate(c.brokers))
    kp = k["part"]
    lke = kp["lastKnownElr"]
    if len(lke) > 1:
        raise ProjectionError(f"Kafka's lastKnownElr {lke} holds more than the last known "
                              "leader (useLastKnownLeaderInBalancedRecovery is on)")
    old = {r.broker_id: r for r in s.registrations}
    regs = []
    for r in k["regs"]:
        b = name[r["id"]]
        if r["inControlledShutdown"] and not r["fenced"]:
            raise ProjectionError(f"broker {b} left unfenced in controlled shutdown at the end "
                                  "of a step")
        o = old.get(b)
        hb = o.last_heartbeat_ms if o else 0
        if b == touched and now_ms is not None:
            hb = now_ms
        fence_epoch = o.fence_epoch if o else 0
        if o is not None and r["fenced"] and not o.fenced:
            fence_epoch += 1
        regs.append(BrokerRegistration(b, r["epoch"], r["fenced"], hb, fence_epoch))
    p = s.partition.with_(
        leader=name[kp["leader"]] if kp["leader"] >= 0 else NO_LEADER,
        leader_epoch=kp["leaderEpoch"] + 1, partition_epoch=kp["partitionEpoch"],
        isr=frozenset(name[i] for i in kp["isr"]), elr=frozenset(name[i] for i in kp["elr"]),
        last_known_elr=frozenset(),
        last_known_leader=name[lke[0]] if lke else NO_LEADER)
    base = s if isinstance(s, KafkaControllerState) else KafkaControllerState(**{
        f: getattr(s, f) for f in rc.ControllerState.__dataclass_fields__})
    return replace(base, partition=p, registrations=tuple(regs), min_isr=k["minIsr"],
                   recovering=kp["recovering"],
                   in_controlled_shutdown=frozenset(name[r["id"]] for r in k["regs"]
                                                    if r["inControlledShutdown"]))


# ------------------------------------------------------------------------- the controller

class KafkaElrController(rc.Controller):
    """refimpl/elr/controller.py's Controller with every decision taken by Kafka's controller
    (kafka_harness/elr): the handlers keep the refimpl's message plumbing (who is answered,
    with which metadata; the simulator's bounds) and ask Kafka for the new state.  Kafka
    elects inside each input (PartitionChangeBuilder), so there is no separate election step
    and no unclean recovery (Kafka 4.x has no GetReplicaLogInfo)."""

    def __init__(self, config: ElrConfig, h: ElrHarness | None = None,
                 registers_fenced: bool = True):
        super().__init__(config)
        self.h = h or harness()
        # spec KafkaRegistersFenced: a restart is two spec steps as in Kafka (RestartBroker
        # registers the broker fenced, its first heartbeat unfences it); FALSE (a KIP config):
        # one step, the registration and that heartbeat together (spec abstraction A8)
        self.registers_fenced = registers_fenced

    # ---- Kafka's answers ---------------------------------------------------------------
    def _kafka(self, s: rc.ControllerState, op: str, **args) -> dict:
        return self.h.call({"op": op, "state": to_kafka(s), **args})

    def initial_registered(self) -> KafkaControllerState:
        s = super().initial_registered()
        k = self.h.call({"op": "initial", "replicas": list(range(len(self.config.brokers))),
                         "minIsr": self.config.min_isr, "elrEnabled": self.config.elr_enabled,
                         "uncleanElection": to_kafka(s)["uncleanElection"]})
        return from_kafka(s, k["state"])

    def _elect(self, s):
        """Kafka elected (or not) inside the input already; only the bound is checked:
        a step whose election goes beyond MaxLeaderEpoch is not taken (bounded mode)."""
        m = self.config.max_leader_epoch
        if m is not None and s.partition.leader_epoch > m:
            return s, (), rc.BLOCKED
        return replace(s, recovery=None), (), ""

    @staticmethod
    def _stamp_partition_epoch(p0, p):
        """Kafka's partition epoch as Kafka wrote it (one bump per PartitionChangeRecord)."""
        return p

    def _beyond_partition_epoch(self, s0, s) -> bool:
        m = self.config.max_partition_epoch
        return m is not None and s.partition.partition_epoch > m

    def _fence(self, s, b: str):
        reg = s.registration(b)
        if reg is None or reg.fenced:
            return s
        return from_kafka(s, self._kafka(s, "fence", broker=_ids(self.config)[b])["state"])

    # ---- inputs ------------------------------------------------------------------------
    def on_registration(self, s, req: BrokerRegistrationRequest, now_ms: int):
        """ClusterControlManager.registerBroker (PreviousBrokerEpoch compared with the
        registration record; clean -> handleBrokerShutdown(clean), unclean ->
        handleBrokerUncleanShutdown); the new registration is fenced (spec RestartBroker under
        KafkaRegistersFenced; its heartbeat is a later UnfenceBroker step).  Under a KIP config
        the new incarnation's first heartbeat after it caught up (processBrokerHeartbeat ->
        UNFENCED) is taken in the same step: spec RestartBroker (A8)."""
        b = req.broker_id
        old = s.registration(b)
        if b not in self.config.brokers or old is None or req.incarnation <= s.incarnation(b):
            return super().on_registration(s, req, now_ms)   # stale or duplicate: no change
        if self.config.max_broker_epoch is not None and \
                old.broker_epoch >= self.config.max_broker_epoch:
            return None
        bid = _ids(self.config)[b]
        epoch = old.broker_epoch + 1
        k = self._kafka(s, "register", broker=bid, previousBrokerEpoch=req.previous_broker_epoch,
                        newEpoch=epoch)
        if not self.registers_fenced:
            k = self.h.call({"op": "heartbeat", "state": k["state"], "broker": bid})
        s2 = from_kafka(s, k["state"], now_ms, b)
        s2 = replace(s2, incarnations=tuple(sorted(dict(s.incarnations, **{b: req.incarnation})
                                                   .items(),
                                                   key=lambda x: self.config.brokers.index(x[0]))))
        c = self.config.controller
        clean = req.previous_broker_epoch == old.broker_epoch

        def reply(st):
            return (Envelope(c, b, BrokerRegistrationResponse(b, req.incarnation, epoch,
                                                              st.metadata_for(b))),)
        return self._finish(s, s2, "HandleBrokerRegistration",
                            {"broker": b, "clean": clean, "brokerEpoch": epoch}, reply=reply)

    def on_heartbeat(self, s, req: BrokerHeartbeatRequest, now_ms: int):
        """processBrokerHeartbeat: a fenced broker's heartbeat unfences it (elections for
        leaderless partitions); WantShutDown is the controlled shutdown
        (handleBrokerInControlledShutdown, then SHUTDOWN_NOW = handleBrokerFenced)."""
        reg = s.registration(req.broker_id)
        if reg is None or reg.broker_epoch != req.broker_epoch:
            return None
        bid = _ids(self.config)[req.broker_id]
        if req.want_shutdown:
            k = self._kafka(s, "controlledShutdown", broker=bid)
            return self._finish(s, from_kafka(s, k["state"]), "ControlledShutdown",
                                {"broker": req.broker_id})
        if not reg.fenced:
            return super().on_heartbeat(s, req, now_ms)     # a session keep-alive only
        k = self._kafka(s, "heartbeat", broker=bid)
        s2 = from_kafka(s, k["state"], now_ms, req.broker_id)
        c = self.config.controller

        def reply(st):
            return (Envelope(c, req.broker_id, BrokerHeartbeatResponse(
                reg.broker_epoch, False, st.metadata_for(req.broker_id))),)
        return self._finish(s, s2, "UnfenceBroker", {"broker": req.broker_id}, reply=reply)

    def on_alter_partition(self, s, req: AlterPartitionRequest):
        """ReplicationControlManager.alterPartition (KIP-903 broker epochs in NewIsrWithEpochs;
        0 = not named, Kafka's -1)."""
        ids = _ids(self.config)
        epochs = dict(req.broker_epochs)
        isr = sorted(req.new_isr, key=self.config.brokers.index)
        k = self._kafka(s, "alterPartition", broker=ids[req.broker_id],
                        brokerEpoch=req.broker_epoch, leaderEpoch=req.leader_epoch - 1,
                        partitionEpoch=req.partition_epoch, isr=[ids[m] for m in isr],
                        isrEpochs=[epochs.get(m, 0) or -1 for m in isr])
        err = k["error"]
        c = self.config.controller
        b = req.broker_id
        if err != "NONE":
            resp = AlterPartitionResponse(_spec_error(err), None, req.new_isr,
                                          req.partition_epoch, broker_epoch=req.broker_epoch)
            return Transition(state=s, action="RejectAlterPartition",
                              params={"broker": b, "error": _spec_error(err), "kafka_error": err},
                              sends=(Envelope(c, b, resp),))
        s2 = from_kafka(s, k["state"])

        def reply(st):
            return (Envelope(c, b, AlterPartitionResponse("NONE", st.metadata_for(b),
                                                          req.new_isr, req.partition_epoch,
                                                          broker_epoch=req.broker_epoch)),)
        return self._finish(s, s2, "HandleAlterPartition",
                            {"broker": b, "isr": frozenset(req.new_isr),
                             "shrink": req.new_isr < s.partition.isr}, reply=reply)

    def on_alter_min_isr(self, s, req: AlterMinIsrRequest):
        """ConfigurationControlManager.incrementalAlterConfig of min.insync.replicas (its
        ClearElrRecord replayed)."""
        if req.min_isr < 1 or req.min_isr == s.min_isr:
            return None
        k = self._kafka(s, "setMinIsr", minIsr=req.min_isr)
        if k["error"] != "NONE":
            return None
        return self._finish(s, from_kafka(s, k["state"]), "AlterMinIsr", {"minIsr": req.min_isr})



def _spec_error(kafka_error: str) -> str:
    """Kafka's AlterPartition error as the spec's: the ones the spec has are kept;
    NOT_LEADER_OR_FOLLOWER and STALE_BROKER_EPOCH (a request of a broker that no longer leads,
    or of a previous incarnation) are the spec's FENCED_LEADER_EPOCH case (leader /= b)."""
    if kafka_error in SPEC_ERRORS:
        return kafka_error
    if kafka_error in ("NOT_LEADER_OR_FOLLOWER", "STALE_BROKER_EPOCH"):
        return "FENCED_LEADER_EPOCH"
    raise ProjectionError(f"Kafka answered AlterPartition with {kafka_error}, which "
                          "spec/ELR.tla's AlterPartitionErrors has no counterpart for")


def _spec_operators() -> frozenset[str]:
    """The operators spec/ELR.tla defines (its invariants and properties among them)."""
    text = (REPO_ROOT / "spec" / "ELR.tla").read_text(encoding="utf-8")
    return frozenset(re.findall(r"^([A-Za-z]\w*)\s*==", text, re.M))


class JudgeMonitor(Monitor):
    """The refimpl's online monitor reporting what the chosen judge config checks: a spec/ELR.tla
    invariant or property the --bounds config does not list is left out (a kafka-4.x config
    leaves out the ones Kafka breaks by design, each a documented finding); the monitor's own
    checks that are no spec operator (AckedRecordsOnMinIsr, ...) and, unbounded, everything
    are kept."""

    def __init__(self, inner: ElrMonitor, judged: frozenset[str] | None):
        self.inner = inner
        spec = _spec_operators()
        self.dropped = frozenset() if judged is None else \
            frozenset(n for n in inner.names if n in spec and n not in judged)
        self.names = tuple(n for n in inner.names if n not in self.dropped)

    def check(self, world, action, node):
        return [v for v in self.inner.check(world, action, node)
                if v.invariant not in self.dropped]


class KafkaELRAdapter(ELRAdapter):
    """The refimpl's ELR adapter (brokers, producer, disks, composite steps, projection) with
    Kafka's controller."""

    def __init__(self, config: ElrConfig | None = None, max_restarts: int | None = None,
                 max_client_requests: int | None = None, registers_fenced: bool = True,
                 judged: frozenset[str] | None = None):
        super().__init__(config, max_restarts, max_client_requests)
        self.controller = KafkaElrController(self.config, registers_fenced=registers_fenced)
        self.judged = judged

    def monitor(self) -> Monitor:
        return JudgeMonitor(ElrMonitor(self.config), self.judged)

    @staticmethod
    def check_options(bounds: Any | None) -> ElrConfig:
        """The run's config; ValueError for a config Kafka's controller cannot run: a Bug*
        switch (a bug of the refimpl) or the unclean recovery manager with the Aggressive
        strategy (Kafka 4.x has no GetReplicaLogInfo; its unclean election is
        unclean.leader.election.enable, the spec's UncleanRecoveryEnabled = FALSE)."""
        config, _ = config_from_bounds(bounds, None, kafka=True)
        if config.bug is not None:
            raise ValueError(f"the config selects the refimpl bug {config.bug!r} (a Bug* "
                             "switch); Kafka's controller runs as released")
        return config

    @classmethod
    def from_options(cls, bounds: Any | None, bug: str | None) -> "KafkaELRAdapter":
        if bug is not None:
            raise ValueError("--bug plants a bug in the refimpl; Kafka's controller runs as "
                             "released")
        cls.check_options(bounds)
        config, limits = config_from_bounds(bounds, None, kafka=True)
        fenced = True if bounds is None else bounds.bool("KafkaRegistersFenced", False)
        judged = None
        if bounds is not None:
            cfg = read_tlc_cfg(bounds.path)
            judged = frozenset(cfg.invariants + cfg.properties)
        return cls(config, registers_fenced=fenced, judged=judged, **limits)

