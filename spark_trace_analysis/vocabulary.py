"""The action names a trace may carry, per protocol: the spec's Next actions (read from
spec/<module>.tla by kraftcore.speclint when the spec is there) united with the names the
refimpl's spec mapping documents (spec actions, and the stutters it writes for network and
crash events).  An action outside this vocabulary makes its trace line a bad row.

Reading the spec's actions parses every module of spec/ with the `tla` parser (seconds of
Python in the driver, the largest fixed cost of a small stats run): it is done once for the
three protocol modules together and kept in the work folder under a key of the spec modules'
names and bytes, the linter's source and the parser's version (`_spec_actions_cached`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from kraftcore.paths import SPEC_DIR

__all__ = ["known_actions", "SPEC_MODULES"]

SPEC_MODULES = {"kraft": "KRaft", "elr": "ELR", "reassign": "KRaftReassign"}


def _spec_key() -> str:
    """A key of what the spec's action lists are read from: spec/*.tla (names and bytes), the
    linter's source and the `tla` parser's version."""
    import hashlib
    from importlib.metadata import PackageNotFoundError, version

    import kraftcore.speclint as speclint
    h = hashlib.sha256()
    for p in sorted(SPEC_DIR.glob("*.tla")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(Path(speclint.__file__).read_bytes())
    try:
        h.update(version("tla").encode())
    except PackageNotFoundError:
        pass
    return h.hexdigest()[:32]


@lru_cache(maxsize=None)
def _spec_actions_cached() -> dict[str, list[str]]:
    """{module: its Next actions} for the protocol modules of SPEC_MODULES found in spec/ (a
    module that is missing, or a spec that does not parse, gives none; the latter is not kept)."""
    import json

    from kraftcore.output import write_atomic
    from kraftcore.paths import work_dir
    modules = [m for m in SPEC_MODULES.values() if (SPEC_DIR / f"{m}.tla").exists()]
    if not modules:
        return {}
    path = work_dir() / "spark" / "vocabulary" / f"{_spec_key()}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    try:
        from kraftcore.speclint import lint_spec_dir
        reps = lint_spec_dir(SPEC_DIR, modules)
    except Exception:  # a spec being edited may not parse; the refimpl vocabulary remains
        return {}
    acts = {m: sorted({a for r in reps if r.module == m for a in r.actions}) for m in modules}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(acts, indent=1) + "\n")
    except OSError:     # a read-only work folder: the next run reads the spec again
        pass
    return acts


def _spec_actions(module: str) -> set[str]:
    return set(_spec_actions_cached().get(module, ()))


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
