"""Sets of replicas with cardinalities, for every replication factor at once.

z3's sets are arrays of Booleans and have no cardinality, so the ELR rules (which compare
|ISR| with min.insync.replicas) are encoded the way decision procedures for Boolean algebra
with Presburger arithmetic do it (Kuncak, Nguyen, Rinard, "Deciding Boolean Algebra with
Presburger Arithmetic", JAR 2006): with k named base sets (ISR, ELR, LastKnownELR, the
leader, ...), the replicas fall into 2^k Venn regions, one for each combination of
memberships; each region's size is an unbounded non-negative integer.  A set built from the
base sets by union, intersection and difference is a union of regions, so its cardinality is
a linear sum of region sizes, and equality, emptiness and inclusion are linear constraints.
The encoding is exact (a model gives concrete sets: `materialize`), and the replication
factor (the size of the universe, every region together) is an unbounded integer: the proofs
hold for every replication factor, not up to a bound.

A set is represented by the frozenset of the regions it covers; a region is the bitmask of
the base sets it belongs to.  A single replica (the leader, the fenced broker, the elected
candidate) is a base set of size 1 (or 0 when absent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import z3

__all__ = ["Venn", "RSet"]

RSet = frozenset  # frozenset[int]: the regions a set covers


class Venn:
    def __init__(self, prefix: str, names: Iterable[str]):
        self.prefix = prefix
        self.names = tuple(names)
        self.k = len(self.names)
        self.regions = range(1 << self.k)
        self.size = {r: z3.Int(f"{prefix}|{self._label(r)}") for r in self.regions}
        self.universe: RSet = frozenset(self.regions)
        self.none: RSet = frozenset()
        # building z3 terms dominates the run time: each distinct set's terms are built once
        self._card: dict[RSet, z3.ArithRef] = {}
        self._empty: dict[RSet, z3.BoolRef] = {}

    def _label(self, r: int) -> str:
        return "+".join(n for i, n in enumerate(self.names) if r >> i & 1) or "-"

    # ------------------------------------------------------------------ sets and formulas
    def base(self, name: str) -> RSet:
        i = self.names.index(name)
        return frozenset(r for r in self.regions if r >> i & 1)

    def card(self, s: RSet) -> z3.ArithRef:
        if s not in self._card:
            self._card[s] = z3.Sum([self.size[r] for r in sorted(s)]) if s else z3.IntVal(0)
        return self._card[s]

    def empty(self, s: RSet) -> z3.BoolRef:
        if s not in self._empty:
            self._empty[s] = (z3.And([self.size[r] == 0 for r in sorted(s)]) if s
                              else z3.BoolVal(True))
        return self._empty[s]

    def nonempty(self, s: RSet) -> z3.BoolRef:
        return z3.Not(self.empty(s))

    def subset(self, a: RSet, b: RSet) -> z3.BoolRef:
        return self.empty(a - b)

    def eq(self, a: RSet, b: RSet) -> z3.BoolRef:
        return self.empty(a ^ b)

    def disjoint(self, a: RSet, b: RSet) -> z3.BoolRef:
        return self.empty(a & b)

    def n(self) -> z3.ArithRef:
        """The replication factor: every replica is in exactly one region."""
        return self.card(self.universe)

    def well_formed(self) -> list[z3.BoolRef]:
        return [self.size[r] >= 0 for r in self.regions]

    # ------------------------------------------------------------------ models
    def counts(self, model: z3.ModelRef) -> dict[int, int]:
        return {r: model.eval(self.size[r], model_completion=True).as_long()
                for r in self.regions}

    def materialize(self, model: z3.ModelRef) -> dict[int, list[str]]:
        """Concrete replicas b1, b2, ... for each region of a model."""
        out: dict[int, list[str]] = {}
        i = 0
        for r, c in self.counts(model).items():
            out[r] = [f"b{i + j + 1}" for j in range(c)]
            i += c
        return out

    def show(self, model: z3.ModelRef, sets: Mapping[str, RSet]) -> dict[str, list[str]]:
        """The named sets of a model as sorted lists of concrete replica names."""
        el = self.materialize(model)
        key = lambda b: int(b[1:])  # noqa: E731
        return {name: sorted((b for r in s for b in el[r]), key=key)
                for name, s in sets.items()}

    # ------------------------------------------------------------------ concrete inputs
    def fix(self, assignment: Mapping[str, frozenset], universe: frozenset) -> list[z3.BoolRef]:
        """Constraints fixing every region size to the one of concrete base sets (each a
        subset of `universe`): used to evaluate an encoding on given inputs."""
        sizes = dict.fromkeys(self.regions, 0)
        for x in universe:
            r = sum(1 << i for i, n in enumerate(self.names) if x in assignment.get(n, ()))
            sizes[r] += 1
        return [self.size[r] == c for r, c in sizes.items()]

    def concrete(self, s: RSet, assignment: Mapping[str, frozenset],
                 universe: frozenset) -> frozenset:
        """The concrete set a region set denotes under concrete base sets."""
        return frozenset(x for x in universe
                         if sum(1 << i for i, n in enumerate(self.names)
                                if x in assignment.get(n, ())) in s)
