"""The action names a trace may carry, per protocol: the spec's Next actions (read from
spec/<module>.tla by kraftcore.speclint when the spec is there) united with the names the
refimpl's spec mapping documents (spec actions, and the stutters it writes for network and
crash events).  An action outside this vocabulary makes its trace line a bad row."""

from __future__ import annotations

from functools import lru_cache

from kraftcore.paths import SPEC_DIR

__all__ = ["known_actions", "SPEC_MODULES"]

SPEC_MODULES = {"kraft": "KRaft", "elr": "ELR", "reassign": "KRaftReassign"}


def _spec_actions(module: str) -> set[str]:
    path = SPEC_DIR / f"{module}.tla"
    if not path.exists():
        return set()
    try:
        from kraftcore.speclint import lint_spec_dir
        reps = lint_spec_dir(SPEC_DIR, [module])
    except Exception:  # a spec being edited may not parse; the refimpl vocabulary remains
        return set()
    return {a for r in reps for a in r.actions}


def _refimpl_actions(protocol: str) -> set[str]:
    if protocol == "kraft":
        from refimpl.kraft import spec_mapping as m
        return set(m.ACTION_NAMES.values()) | set(m.NETWORK_ACTIONS.values())
    if protocol == "reassign":
        from refimpl.kraft import reassign_mapping as rm
        from refimpl.kraft import spec_mapping as m
        return set(rm.ACTION_NAMES.values()) | set(m.NETWORK_ACTIONS.values())
    if protocol == "elr":
        from refimpl.elr import spec_mapping as m
        return set(m.ACTION_MAP.values()) | {"Stutter", "Crash"} | {
            m.network_action(g) for g in ("DropMessage", "DuplicateMessage", "Partition",
                                          "Heal", "Crash", "Restart")}
    return set()


@lru_cache(maxsize=None)
def known_actions(protocol: str) -> frozenset[str]:
    module = SPEC_MODULES.get(protocol)
    acts = _refimpl_actions(protocol) | (_spec_actions(module) if module else set())
    return frozenset(acts | {"Init"}) if acts else frozenset()
