"""Building an ElrConfig from a TLC configuration (bounded mode) or from defaults.

`kraftcheck simulate --protocol elr --bounds tlc_configs/elr-*.cfg` passes the parsed CONSTANT
section (refimpl.sim.bounds.Bounds); the constants named in spec/ELR.tla set the cluster and the
bounds, so the simulator explores inside the same finite model TLC checks.
"""

from __future__ import annotations

from typing import Any

from refimpl.bugs import get_bug

from .types import STRATEGIES, ElrConfig

__all__ = ["config_from_bounds", "CONSTANT_NAMES"]

#: spec constant -> ElrConfig field (alternative spellings accepted, first match wins).
CONSTANT_NAMES: dict[str, tuple[str, ...]] = {
    "brokers": ("Brokers", "Replicas", "Servers"),
    "min_isr": ("MinIsr", "MinISR", "InitMinIsr"),
    "values": ("Values", "Value"),
    "max_log_len": ("MaxLogLength", "MaxLogLen", "MaxOffset"),
    "max_unclean_shutdowns": ("MaxUncleanShutdowns", "MaxUnclean"),
    "max_leader_epoch": ("MaxLeaderEpoch", "MaxEpoch"),
    "elr_enabled": ("ElrEnabled", "ELREnabled", "EligibleLeaderReplicasEnabled"),
    "strategy": ("Strategy", "UncleanRecoveryStrategy"),
    "min_isr_choices": ("MinIsrValues", "MinIsrChoices"),
    "max_restarts": ("MaxRestarts", "MaxCrashes"),
    "max_client_requests": ("MaxClientRequests", "MaxProduce"),
}


def _lookup(bounds: Any, field: str) -> Any:
    for name in CONSTANT_NAMES[field]:
        if bounds.has(name):
            return bounds.constants[name]
    return None


def _sorted_names(v: Any) -> tuple[str, ...]:
    return tuple(sorted(v, key=lambda x: (len(str(x)), str(x))))


def config_from_bounds(bounds: Any | None, bug: str | None) -> tuple[ElrConfig, dict]:
    """(config, simulator limits) for `bounds` (None: the defaults) and planted `bug`."""
    if bug is not None and get_bug(bug).protocol != "elr":
        raise ValueError(f"planted bug {bug!r} belongs to protocol {get_bug(bug).protocol!r}")
    kw: dict[str, Any] = {"bug": bug}
    limits: dict[str, Any] = {}
    if bug == "balanced-fixed-replies":
        kw["strategy"] = "Balanced"
    if bounds is None:
        return ElrConfig(**kw), limits
    v = _lookup(bounds, "brokers")
    if v is not None:
        kw["brokers"] = _sorted_names(v)
    v = _lookup(bounds, "values")
    if v is not None:
        kw["values"] = _sorted_names(v)
    for f in ("min_isr", "max_log_len", "max_unclean_shutdowns", "max_leader_epoch"):
        v = _lookup(bounds, f)
        if v is not None:
            kw[f] = int(v)
    v = _lookup(bounds, "elr_enabled")
    if v is not None:
        kw["elr_enabled"] = bool(v)
    v = _lookup(bounds, "strategy")
    if v is not None:
        if str(v) not in STRATEGIES:
            raise ValueError(f"{bounds.path}: unknown unclean recovery strategy {v!r}")
        kw["strategy"] = str(v)
    v = _lookup(bounds, "min_isr_choices")
    if v is not None:
        kw["min_isr_choices"] = tuple(sorted(int(x) for x in v))
    for f in ("max_restarts", "max_client_requests"):
        v = _lookup(bounds, f)
        if v is not None:
            limits[f] = int(v)
    return ElrConfig(**kw), limits
