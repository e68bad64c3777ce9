"""Every proof obligation, in a stable order (KIP-595 first, then KIP-966)."""

from __future__ import annotations

import fnmatch

from . import elr_controller, elr_hwm, elr_recovery, kraft_hwm, kraft_log
from .core import COUNTEREXAMPLE, Obligation

__all__ = ["obligations", "select", "UnknownObligation"]

FAMILIES = (kraft_log, kraft_hwm, elr_hwm, elr_recovery, elr_controller)


class UnknownObligation(ValueError):
    pass


def obligations() -> list[Obligation]:
    obs = [ob for mod in FAMILIES for ob in mod.obligations()]
    names = [ob.name for ob in obs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RuntimeError(f"duplicate obligation names: {dup}")
    unnamed = [ob.name for ob in obs if ob.expected == COUNTEREXAMPLE and ob.refutes is None]
    if unnamed:
        raise RuntimeError(f"expected counterexamples must name the property they break: "
                           f"{unnamed}")
    return obs


def select(patterns: list[str] | None) -> list[Obligation]:
    """The obligations named by `patterns` (exact names, family names kip595 / kip966, or
    shell-style globs such as 'kip966-planted-*'); all of them when `patterns` is empty.
    A pattern that names nothing raises UnknownObligation."""
    obs = obligations()
    if not patterns:
        return obs
    picked: list[Obligation] = []
    for p in patterns:
        hits = [ob for ob in obs if ob.name == p or ob.family == p
                or fnmatch.fnmatchcase(ob.name, p)]
        if not hits:
            raise UnknownObligation(
                f"--only {p!r}: no such obligation (see `kraftcheck prove --list`)")
        picked += [ob for ob in hits if ob not in picked]
    return [ob for ob in obs if ob in picked]
