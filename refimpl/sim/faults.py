"""Named fault profiles for the simulator: none, lossy, partitions, crashes, chaos, delays,
disk-loss.

A profile fixes the network's latency / loss / duplication (and occasional long delays), how
often partitions (symmetric or asymmetric) start and how long they last, how often a node
crashes (and how: plain crash, graceful shutdown, unclean shutdown, disk loss), how long it
stays down, and the client workload rate.  Rates are mean intervals in virtual milliseconds
(exponentially distributed); 0 disables.

`delays` reaches the windows between a request and the decision that depends on it: a few
messages are held back for up to seconds while crashes and partitions move the epoch on, so
stale Vote / BeginQuorumEpoch / Fetch requests and responses (KIP-595) and GetReplicaLogInfo
replies (KIP-966 unclean recovery) arrive after the replica or the controller that asked has
been fenced.  `disk-loss` restarts a replica with an empty log and quorum-state (spec action
LoseDisk), as Kafka's RaftEventSimulationTest.canRecoverFromSingleNodeCommittedDataLoss does:
one replica at a time; the loss takes effect at the replica's restart, only once the others
follow a leader of an epoch it never reached that has committed (spec/KRaftHistory.tla's
"AfterNewLeaderCommitted"; the protocol cannot protect more than that; see docs/refimpl.md).  Neither is in `chaos`,
so the corpora of the older profiles keep their meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FaultProfile", "PROFILES", "DEFAULT_PROFILES", "get_profile", "UnknownProfile"]


class UnknownProfile(KeyError):
    pass


@dataclass(frozen=True)
class FaultProfile:
    name: str
    latency_ms: tuple[int, int] = (1, 10)       # uniform one-way latency: reordering comes from it
    loss: float = 0.0                            # probability a message is lost
    duplication: float = 0.0                     # probability a message is delivered twice
    partition_every_ms: int = 0                  # mean time between partition starts
    partition_duration_ms: tuple[int, int] = (500, 3000)
    asymmetric: float = 0.5                      # probability a partition is one-way
    crash_every_ms: int = 0                      # mean time between crashes
    downtime_ms: tuple[int, int] = (100, 3000)
    graceful: float = 0.3                        # probability a crash is a graceful shutdown
    unclean: float = 0.3                         # probability a crash is an unclean shutdown
    client_every_ms: int = 150                   # mean time between client requests
    disk_loss: float = 0.0                       # probability a crash loses the node's disk
    long_delay: float = 0.0                      # probability a message is held back long
    long_delay_ms: tuple[int, int] = (200, 3000)  # the extra delay of such a message
    async_log_info: bool = False                 # KIP-966 GetReplicaLogInfo via the network


PROFILES: dict[str, FaultProfile] = {p.name: p for p in (
    FaultProfile("none"),
    FaultProfile("lossy", latency_ms=(1, 60), loss=0.1, duplication=0.05),
    FaultProfile("partitions", latency_ms=(1, 20), loss=0.01, partition_every_ms=1500),
    FaultProfile("crashes", latency_ms=(1, 20), crash_every_ms=1200, downtime_ms=(50, 2500)),
    FaultProfile("chaos", latency_ms=(1, 80), loss=0.08, duplication=0.05,
                 partition_every_ms=1500, crash_every_ms=1000, downtime_ms=(50, 2500),
                 client_every_ms=80),
    FaultProfile("delays", latency_ms=(1, 20), long_delay=0.12, long_delay_ms=(150, 2500),
                 duplication=0.03, partition_every_ms=2500, partition_duration_ms=(300, 1500),
                 crash_every_ms=1500, downtime_ms=(50, 1500), async_log_info=True),
    FaultProfile("disk-loss", latency_ms=(1, 20), crash_every_ms=1500, downtime_ms=(50, 2500),
                 graceful=0.2, unclean=0.0, disk_loss=0.6),
)}

# The profiles the liveness benchmark and the default corpora use (every one of them must
# recover once its faults stop: benchmarks/bench_liveness.py).
DEFAULT_PROFILES = ("none", "lossy", "partitions", "crashes", "chaos", "delays", "disk-loss")


def get_profile(name: str) -> FaultProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownProfile(
            f"unknown fault profile {name!r}; choose one of: {', '.join(PROFILES)}") from None
