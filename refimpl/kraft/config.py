"""The KIP-595 quorum configuration (KIP-595 "Configurations"), as a typed dataclass.

The KIP's property names map one-to-one onto fields:

    quorum.voters                  voters                   ({id}@{host}:{port}, comma separated)
    quorum.fetch.timeout.ms        fetch_timeout_ms
    quorum.election.timeout.ms     election_timeout_ms
    quorum.election.backoff.max.ms election_backoff_max_ms
    quorum.request.timeout.ms      request_timeout_ms
    quorum.retry.backoff.ms        retry_backoff_ms
    quorum.retry.backoff.max.ms    retry_backoff_max_ms

Two settings are not quorum.* properties but belong to the fetch path: fetch_max_records (the
Fetch MaxBytes limit, counted in records) and fetch_poll_ms (how long a follower waits before
fetching again after an empty response; the MaxWaitTimeMs long poll, modelled by the follower).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["QuorumConfig", "ConfigError", "parse_voters", "PROPERTY_NAMES"]


class ConfigError(ValueError):
    pass


PROPERTY_NAMES: dict[str, str] = {
    "quorum.voters": "voters",
    "quorum.fetch.timeout.ms": "fetch_timeout_ms",
    "quorum.election.timeout.ms": "election_timeout_ms",
    "quorum.election.backoff.max.ms": "election_backoff_max_ms",
    "quorum.request.timeout.ms": "request_timeout_ms",
    "quorum.retry.backoff.ms": "retry_backoff_ms",
    "quorum.retry.backoff.max.ms": "retry_backoff_max_ms",
}

_VOTER = re.compile(r"\s*([A-Za-z0-9_]+)@([^:\s]+):([0-9]+)\s*\Z")


def parse_voters(text: str) -> dict[str, tuple[str, int]]:
    """`1@kafka-1:9092, 2@kafka-2:9092` -> {"1": ("kafka-1", 9092), ...} (insertion-ordered)."""
    out: dict[str, tuple[str, int]] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        m = _VOTER.match(part)
        if not m:
            raise ConfigError(f"quorum.voters: {part.strip()!r} is not {{id}}@{{host}}:{{port}}")
        vid, host, port = m.group(1), m.group(2), int(m.group(3))
        if vid in out:
            raise ConfigError(f"quorum.voters: voter {vid} listed twice")
        out[vid] = (host, port)
    if not out:
        raise ConfigError("quorum.voters: no voters")
    return out


@dataclass(frozen=True)
class QuorumConfig:
    voters: tuple[str, ...]
    fetch_timeout_ms: int = 2000
    election_timeout_ms: int = 1000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    retry_backoff_max_ms: int = 1000
    fetch_max_records: int = 2
    fetch_poll_ms: int = 50
    endpoints: Mapping[str, tuple[str, int]] = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not self.voters:
            raise ConfigError("quorum.voters: no voters")
        for name in ("fetch_timeout_ms", "election_timeout_ms", "election_backoff_max_ms",
                     "request_timeout_ms", "retry_backoff_ms", "retry_backoff_max_ms",
                     "fetch_max_records"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.fetch_poll_ms < 0:
            raise ConfigError("fetch_poll_ms must be >= 0")

    def is_voter(self, node: str) -> bool:
        return node in self.voters

    @classmethod
    def from_properties(cls, props: Mapping[str, str], **extra) -> "QuorumConfig":
        """Build from KIP property names (`quorum.voters`, `quorum.fetch.timeout.ms`, ...)."""
        kw: dict = {}
        for key, value in props.items():
            if key not in PROPERTY_NAMES:
                raise ConfigError(f"unknown quorum property {key!r}")
            fname = PROPERTY_NAMES[key]
            if fname == "voters":
                eps = parse_voters(value)
                kw["voters"] = tuple(eps)
                kw["endpoints"] = eps
            else:
                try:
                    kw[fname] = int(value)
                except ValueError:
                    raise ConfigError(f"{key}: {value!r} is not an integer") from None
        if "voters" not in kw:
            raise ConfigError("quorum.voters is required")
        kw.update(extra)
        return cls(**kw)
