"""Named fault profiles for the simulator: none, lossy, partitions, crashes, chaos.

A profile fixes the network's latency / loss / duplication, how often partitions (symmetric or
asymmetric) start and how long they last, how often a node crashes (and how: plain crash,
graceful shutdown, unclean shutdown), how long it stays down, and the client workload rate.
Rates are mean intervals in virtual milliseconds (exponentially distributed); 0 disables.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FaultProfile", "PROFILES", "get_profile", "UnknownProfile"]


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


PROFILES: dict[str, FaultProfile] = {p.name: p for p in (
    FaultProfile("none"),
    FaultProfile("lossy", latency_ms=(1, 60), loss=0.1, duplication=0.05),
    FaultProfile("partitions", latency_ms=(1, 20), loss=0.01, partition_every_ms=1500),
    FaultProfile("crashes", latency_ms=(1, 20), crash_every_ms=1200, downtime_ms=(50, 2500)),
    FaultProfile("chaos", latency_ms=(1, 80), loss=0.08, duplication=0.05,
                 partition_every_ms=1500, crash_every_ms=1000, downtime_ms=(50, 2500),
                 client_every_ms=80),
)}


def get_profile(name: str) -> FaultProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownProfile(
            f"unknown fault profile {name!r}; choose one of: {', '.join(PROFILES)}") from None
