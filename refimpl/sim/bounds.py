"""Bounded mode: the CONSTANT assignments of a TLC configuration file, as simulator bounds.

`kraftcheck simulate --bounds tlc_configs/X.cfg` makes the simulator respect the same bounds
TLC explores (servers, max epoch, log length, values, restarts...).  The file is read by the
project's one .cfg reader, kraftcore/tlc/cfg.py (values: integers, TRUE / FALSE, "strings",
model values, sets, tuples; `X = X` declares a model value; `X <- Op` substitutions are kept in
`substitutions` but have no value here).  `Bounds` adds typed access for the adapters.

Errors raise `BoundsError` naming the file, the line and the constant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftcore.tlc.cfg import CfgError, TLCConfig
from kraftcore.tlc.cfg import parse_cfg as read_cfg
from kraftcore.tlc.cfg import parse_cfg_text as read_cfg_text

__all__ = ["Bounds", "BoundsError", "parse_cfg", "parse_cfg_text"]


class BoundsError(ValueError):
    pass


@dataclass(frozen=True)
class Bounds:
    """The CONSTANT section of a TLC config: values, model values and substitutions."""

    path: str
    constants: dict[str, Any] = field(default_factory=dict)
    model_values: frozenset[str] = frozenset()
    substitutions: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)   # constant -> line of its assignment

    @classmethod
    def from_config(cls, cfg: TLCConfig) -> "Bounds":
        return cls(path=cfg.path, constants=dict(cfg.constants),
                   model_values=frozenset(cfg.model_values),
                   substitutions=dict(cfg.substitutions),
                   lines={a.name: a.line for a in cfg.assignments})

    def where(self, name: str) -> str:
        """`file:line` of the assignment of `name` (`file` alone if it has none)."""
        line = self.lines.get(name)
        return f"{self.path}:{line}" if line is not None else self.path

    def has(self, name: str) -> bool:
        return name in self.constants

    def int(self, name: str, default: int | None = None) -> int | None:
        if name not in self.constants:
            return default
        v = self.constants[name]
        if type(v) is not int:
            raise BoundsError(f"{self.where(name)}: constant {name} "
                              f"should be an integer, got {v!r}")
        return v

    def bool(self, name: str, default: bool | None = None) -> bool | None:
        if name not in self.constants:
            return default
        v = self.constants[name]
        if type(v) is not bool:
            raise BoundsError(f"{self.where(name)}: constant {name} "
                              f"should be TRUE or FALSE, got {v!r}")
        return v

    def set(self, name: str, default: frozenset | None = None) -> frozenset | None:
        if name not in self.constants:
            return default
        v = self.constants[name]
        if type(v) is not frozenset:
            raise BoundsError(f"{self.where(name)}: constant {name} "
                              f"should be a set, got {v!r}")
        return v

    def first(self, names: tuple[str, ...], kind: str = "int") -> tuple[str, Any] | None:
        """The first of several alternative constant names that is assigned (spec naming may
        vary: MaxEpoch / MaxTerm ...)."""
        for n in names:
            if n in self.constants:
                return n, getattr(self, kind)(n)
        return None


def parse_cfg_text(text: str, path: str = "<cfg>") -> Bounds:
    try:
        return Bounds.from_config(read_cfg_text(text, path))
    except CfgError as e:
        raise BoundsError(str(e)) from None


def parse_cfg(path: str | Path) -> Bounds:
    try:
        return Bounds.from_config(read_cfg(path))
    except CfgError as e:
        raise BoundsError(str(e)) from None
