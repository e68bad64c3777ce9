"""Stepping a trace through a state graph, tracking the set of candidate spec states.

With complete observations the candidate set is the single observed state and each step is one
dictionary lookup plus a scan of the source's successor list.  With partial observations (a
step omits variables) the candidates are every spec state consistent with everything observed
so far: step 0 keeps the initial states that agree with the observed variables; step k keeps the
successors, by an edge labelled with the claimed action, of step k-1's candidates that agree
with step k's observed variables.  The trace is valid when the set never becomes empty.

Stuttering: the specs are `Init /\\ [][Next]_vars`, so a step that leaves the state unchanged is
allowed (a crash of a node whose state the spec keeps, a timer that changes nothing) when it
claims an action of the spec's Next (`actions`, the judge config's action labels, or a label
TLC produced for the graph; a name the spec does not have is a step of no spec action); it
keeps the candidates that agree with the
step's observation.  Complete-observation stutters are counted (`stutters`).

A run is resumable: in neighbourhood mode `advance` stops with ("need", states) when a candidate
has not been expanded yet, and the driver asks TLC for those successors and calls it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trace_checker.codec import Key
from trace_checker.graph import StateGraph
from trace_checker.traces import Trace

__all__ = ["TraceRun", "observed_positions", "matches", "ENVIRONMENT_STUTTERS"]

# Events of the environment or of volatile pacing that change no spec variable, under the
# names the refimpl's spec mappings document for them (refimpl/kraft/spec_mapping.py "always a
# stutter", refimpl/elr/spec_mapping.py "Stutter"); an implementation may write them as
# stutter steps.  Any other name must be an action of the judge's Next.
ENVIRONMENT_STUTTERS = frozenset({
    "Crash", "Partition", "Heal", "FetchRequestTimeout", "ObserverFetchTimeout", "PromotionWindow",
    "ReceiveDescribeQuorumRequest", "ReceiveDescribeQuorumResponse", "Stutter"})


def observed_positions(key: Key) -> list[tuple[int, int]]:
    return [(i, v) for i, v in enumerate(key) if v is not None]


def matches(state: Key, obs: list[tuple[int, int]]) -> bool:
    for i, v in obs:
        if state[i] != v:
            return False
    return True


@dataclass
class TraceRun:
    trace: Trace
    keys: list[Key]
    graph: StateGraph
    max_candidates: int = 100_000
    k: int = 0
    candidates: list[int] = field(default_factory=list)
    max_seen: int = 0
    ambiguous_steps: int = 0
    path: list[int] = field(default_factory=list)     # matched states (complete observation)
    stutters: int = 0                                  # complete steps that changed nothing
    actions: frozenset[str] | None = None              # Next's labels (None: not read)

    def advance(self) -> tuple[str, object]:
        """("valid", None) | ("fail", k) | ("need", [states]) | ("too_ambiguous", k)."""
        g = self.graph
        keys, steps = self.keys, self.trace.steps
        if self.k == 0:
            obs = observed_positions(keys[0])
            if any(v < 0 for _, v in obs):
                return "fail", 0
            cands = [s for s in g.initial if matches(g.states[s], obs)]
            if not cands:
                return "fail", 0
            self._take(cands)
        index, succ, states, expanded = g.index, g.succ, g.states, g.expanded
        complete = g.complete
        n = len(keys)
        while self.k < n:
            cands = self.candidates
            key = keys[self.k]
            if not complete:
                if None not in key and index.get(key) is not None:
                    t = index[key]      # a complete step: a targeted run may have judged it
                    act = steps[self.k].action
                    need = [c for c in cands if not g.knows_step(c, t, act)]
                else:
                    need = [c for c in cands if c not in expanded]
                if need:
                    return "need", need
            action = steps[self.k].action
            aid = g.action_ids.get(action, -1)
            # a stutter must claim an action of Next: the judge's labels read from the spec,
            # or (unreadable, or a label the reading missed) one TLC has produced
            may_stutter = (aid >= 0 or action in ENVIRONMENT_STUTTERS
                           or (self.actions is not None and action in self.actions))
            if None not in key:
                t = index.get(key)
                if t is None:
                    return "fail", self.k
                e = (aid, t)
                for c in cands:
                    if e in succ[c]:
                        break
                else:
                    if t not in cands or not may_stutter:
                        return "fail", self.k
                    self.stutters += 1          # [Next]_vars: an unchanged state is allowed
                new = [t]
            else:
                obs = observed_positions(key)
                if any(v < 0 for _, v in obs):
                    return "fail", self.k
                seen: dict[int, None] = {}
                for c in cands:
                    if may_stutter and matches(states[c], obs):
                        seen[c] = None          # stuttering step
                    for a, d in succ[c]:
                        if a == aid and d not in seen and matches(states[d], obs):
                            seen[d] = None
                new = list(seen)
                if not new:
                    return "fail", self.k
            if len(new) > self.max_candidates:
                return "too_ambiguous", self.k
            self._take(new)
        return "valid", None

    def _take(self, cands: list[int]) -> None:
        self.candidates = cands
        if len(cands) > 1:
            self.ambiguous_steps += 1
        if len(cands) > self.max_seen:
            self.max_seen = len(cands)
        if len(cands) == 1:
            self.path.append(cands[0])
        self.k += 1

    def ambiguity(self) -> dict:
        return {"max_candidates": self.max_seen, "final_candidates": len(self.candidates),
                "ambiguous_steps": self.ambiguous_steps}
