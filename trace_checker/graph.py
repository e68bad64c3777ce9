"""StateGraph: the index of a TLC state graph (state -> labelled successors).

States are codec keys (tuples of per-variable value ids, see codec.py) numbered 0..n-1.  For
each state the graph keeps its labelled successors `(action id, successor number)`.  A graph
is either *complete* (a full dump of a bounded config: every state's successors inside the
model are known) or a *neighbourhood* (only the states in `expanded` have known successors).

`to_networkx()` gives the same graph as a networkx DiGraph (edge attribute `actions`: the
labels of the transitions between the two states) for analysis: coverage of a corpus, shortest
paths from an initial state (used in diagnostics).
"""

from __future__ import annotations

import marshal
from collections.abc import Iterable

import networkx as nx

from kraftcore.values import fingerprint, make_fn
from trace_checker.codec import Codec, Key, parse_texts
from trace_checker.dot import (DotDump, DotFormatError, split_escaped_label, split_label,
                               unescape_label)

__all__ = ["StateGraph", "GraphFormatError"]

FORMAT = 2


class GraphFormatError(ValueError):
    pass


class StateGraph:
    def __init__(self, codec: Codec, complete: bool, meta: dict | None = None):
        self.codec = codec
        self.complete = complete
        self.meta: dict = dict(meta or {})
        self.states: list[Key] = []
        self.index: dict[Key, int] = {}
        self.succ: list = []        # per state: a list (or, loaded, a tuple) of (action, dst)
        self.actions: list[str] = []
        self.action_ids: dict[str, int] = {}
        self.initial: list[int] = []
        self.expanded: set[int] = set()     # neighbourhood graphs only
        # neighbourhood graphs: source -> the next states whose edges from the source are all
        # known (a targeted TLC run, see neighbourhood.py); its other successors are not
        self.targeted: dict[int, set[int]] = {}
        # (source, next) of a targeted run restricted to claimed actions: those actions, the
        # only ones whose edges source -> next are known (absent: every action's are)
        self.step_actions: dict[tuple[int, int], frozenset[str]] = {}
        self._nx: nx.DiGraph | None = None

    # ---- building ----------------------------------------------------------------------
    def add_state(self, key: Key) -> int:
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.states)
            self.states.append(key)
            self.succ.append([])
        return i

    def action_id(self, name: str) -> int:
        a = self.action_ids.get(name)
        if a is None:
            a = self.action_ids[name] = len(self.actions)
            self.actions.append(name)
        return a

    def add_edge(self, src: int, action: str, dst: int) -> None:
        e = (self.action_id(action), dst)
        lst = self.succ[src]
        if e not in lst:
            if type(lst) is tuple:
                lst = self.succ[src] = list(lst)
            lst.append(e)

    def add_dump(self, dump: DotDump, *, jobs: int = 1, expand: str = "all",
                 mark_initial: bool = True, source: str = "dump") -> dict[int, int]:
        """Add a parsed dot dump; returns TLC id -> state number.

        expand: "all" marks every state expanded (complete graphs), "initial" marks the dump's
        initial states (a neighbourhood run: its Init is the set of source states), "none".
        mark_initial: the dump's initial states are the spec's (False for neighbourhood runs).
        """
        codec = self.codec
        nvars = len(codec.variables)
        pos = codec.position
        split: dict[int, list] = {}
        distinct: list[dict[str, None]] = [{} for _ in range(nvars)]
        splitter = split_escaped_label if dump.escaped else split_label
        for tid, label in dump.labels.items():
            try:
                parts = [(pos[v], text) for v, text in splitter(label)]
            except (DotFormatError, KeyError) as e:
                raise GraphFormatError(f"{source}: state {tid}: unexpected label ({e}); the "
                                       f"variables are {sorted(codec.variables)}") from None
            if len(parts) != nvars:
                raise GraphFormatError(f"{source}: state {tid} has {len(parts)} variables, "
                                       f"expected {nvars}: {sorted(codec.variables)}")
            split[tid] = parts
            for p, text in parts:
                distinct[p][text] = None
        flat = [(i, t) for i in range(nvars) for t in distinct[i]]
        try:
            texts = [unescape_label(t) for _, t in flat] if dump.escaped else [t for _, t in flat]
            cjson = parse_texts(texts, jobs)
        except ValueError as e:
            raise GraphFormatError(f"{source}: {e}") from None
        text_id: list[dict[str, int]] = [{} for _ in range(nvars)]
        for (i, t), cj in zip(flat, cjson):
            text_id[i][t] = codec.intern(i, cj)
        tid_to_state: dict[int, int] = {}
        for tid, parts in split.items():
            key = [0] * nvars
            for p, text in parts:
                key[p] = text_id[p][text]
            tid_to_state[tid] = self.add_state(tuple(key))
        if mark_initial:
            for tid in dump.initial:
                s = tid_to_state[tid]
                if s not in self.initial:
                    self.initial.append(s)
        for src, dst, action in dump.edges:
            try:
                self.add_edge(tid_to_state[src], action, tid_to_state[dst])
            except KeyError as e:
                raise GraphFormatError(f"{source}: edge from/to unknown state {e.args[0]}") from None
        if expand == "all":
            self.expanded.update(tid_to_state.values())
        elif expand == "initial":
            self.expanded.update(tid_to_state[t] for t in dump.initial)
        self._nx = None
        return tid_to_state

    @classmethod
    def from_dump(cls, dump: DotDump, variables: Iterable[str] | None = None, *, jobs: int = 1,
                  meta: dict | None = None, source: str = "dump") -> "StateGraph":
        """A complete graph from a full dump; variables default to those of the first state."""
        if variables is None:
            first = next(iter(dump.labels.values()), None)
            if first is None:
                raise GraphFormatError(f"{source}: the dump holds no state")
            splitter = split_escaped_label if dump.escaped else split_label
            variables = sorted(v for v, _ in splitter(first))
        g = cls(Codec(variables), complete=True, meta=meta)
        g.add_dump(dump, jobs=jobs, expand="all", source=source)
        return g

    # ---- queries -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.states)

    @property
    def edge_count(self) -> int:
        return sum(len(s) for s in self.succ)

    def knows_step(self, s: int, t: int, action: str | None = None) -> bool:
        """Are the edges s -> t known (s fully expanded, or t a target of a targeted run)?
        With `action`: those labelled `action` (a run restricted to claimed actions knows
        only theirs); without: every edge s -> t."""
        if self.complete or s in self.expanded:
            return True
        if t not in self.targeted.get(s, ()):
            return False
        only = self.step_actions.get((s, t))
        return only is None or (action is not None and action in only)

    def successors(self, s: int) -> list[tuple[str, int]]:
        acts = self.actions
        return [(acts[a], d) for a, d in self.succ[s]]

    def enabled_actions(self, s: int) -> list[str]:
        return sorted({self.actions[a] for a, _ in self.succ[s]})

    def state(self, s: int) -> dict:
        return self.codec.decode(self.states[s])

    def fingerprint(self, s: int) -> str:
        return fingerprint(make_fn(self.state(s)))

    def to_networkx(self) -> nx.DiGraph:
        if self._nx is None:
            g = nx.DiGraph()
            g.add_nodes_from(range(len(self.states)))
            for s in self.initial:
                g.nodes[s]["initial"] = True
            for s, lst in enumerate(self.succ):
                for a, d in lst:
                    if g.has_edge(s, d):
                        g.edges[s, d]["actions"].append(self.actions[a])
                    else:
                        g.add_edge(s, d, actions=[self.actions[a]])
            self._nx = g
        return self._nx

    def shortest_path(self, target: int) -> list[tuple[str, int]] | None:
        """[("Init", s0), (action, s1), ...] a shortest behaviour reaching `target`."""
        g = self.to_networkx()
        best = None
        for s in self.initial:
            try:
                p = nx.shortest_path(g, s, target)
            except nx.NetworkXNoPath:
                continue
            if best is None or len(p) < len(best):
                best = p
        if best is None:
            return None
        out = [("Init", best[0])]
        for a, b in zip(best, best[1:]):
            out.append((g.edges[a, b]["actions"][0], b))
        return out

    def coverage(self, visited_states: Iterable[int], visited_edges: Iterable[tuple[int, str, int]]
                 ) -> dict:
        """How much of the graph a corpus visited: states, edges and actions."""
        vs = set(visited_states)
        ve = set(visited_edges)
        all_actions = set(self.actions)
        seen_actions = {a for _, a, _ in ve}
        return {
            "states": len(self.states),
            "states_visited": len(vs), "edges": self.edge_count, "edges_visited": len(ve),
            "state_coverage": round(len(vs) / len(self.states), 4) if self.states else 0.0,
            "actions_never_taken": sorted(all_actions - seen_actions),
        }

    # ---- persistence -------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        return marshal.dumps({
            "format": FORMAT, "complete": self.complete, "meta": self.meta,
            "codec": self.codec.to_data(), "states": self.states, "actions": self.actions,
            "succ": [tuple(lst) for lst in self.succ],
            "initial": self.initial, "expanded": sorted(self.expanded),
        })

    @classmethod
    def from_bytes(cls, data: bytes) -> "StateGraph":
        try:
            d = marshal.loads(data)
        except (EOFError, ValueError, TypeError) as e:
            raise GraphFormatError(f"corrupt graph index: {e}") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise GraphFormatError("graph index of another format version")
        g = cls(Codec.from_data(d["codec"]), d["complete"], d["meta"])
        g.states = d["states"]
        g.index = dict(zip(g.states, range(len(g.states))))
        g.actions = d["actions"]
        g.action_ids = {a: i for i, a in enumerate(g.actions)}
        g.succ = d["succ"]          # tuples of (action, successor); add_edge copies on write
        g.initial = d["initial"]
        g.expanded = set(d["expanded"])
        return g
