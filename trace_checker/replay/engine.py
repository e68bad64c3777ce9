"""The replay engine: target edges, shared-prefix replay, one outcome per edge.

Targets (`select_edges`): every edge of the graph, a seeded sample of N edges, or the edges a
corpus of traces never walked.  Paths are shortest paths from an initial state (networkx BFS
over the graph); the driver branches from a saved state (snapshot) wherever two paths share a
prefix, so each state of the paths is driven once.

Modes:
* "all": a breadth-first walk over the edges the implementation follows.  Every state reached
  keeps a snapshot, every outgoing edge is tried from it; so each edge is tried at the end of a
  shortest path among those the implementation can drive.  An edge whose source the walk never
  reaches is reported with the outcome of the first edge of its spec shortest path that did not
  replay (its step k).
* "sample" / "unvisited": the spec's shortest path to each target edge's source, driven along
  the BFS tree (shared prefixes), then the edge itself.

Outcomes per edge: "replayed" (every state matched), "diverged" (at step k: the state the
implementation reached, the one the spec expected, the differing paths -- the trace checker's
diagnosis style, trace_checker/diagnose.py), "not_drivable" (the driver has no event for the
action, or an explained reason: see `explain`).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import networkx as nx

from kraftcore.values import to_itf
from trace_checker.replay.canon import edge_order, ordered_succ, sample_edges, state_keys
from trace_checker.replay.driver import Applied, Driver, SpecStep
from trace_checker.diagnose import value_diff
from trace_checker.graph import StateGraph

__all__ = ["EdgeOutcome", "ReplayRun", "select_edges", "replay", "parse_edges", "EdgesError"]

Edge = tuple[int, int, int]   # (source state, action id, destination state)


class EdgesError(ValueError):
    pass


def parse_edges(text: str) -> tuple[str, int | None]:
    """`all`, `unvisited`, `sample N` / `sample:N` -> (mode, N)."""
    t = text.strip().replace(":", " ").replace("=", " ").split()
    if t and t[0] in ("all", "unvisited") and len(t) == 1:
        return t[0], None
    if t and t[0] == "sample":
        if len(t) != 2 or not t[1].isdigit() or int(t[1]) <= 0:
            raise EdgesError(f"--edges {text!r}: write `sample N` with N a positive integer")
        return "sample", int(t[1])
    raise EdgesError(f"--edges {text!r}: choose all, unvisited or `sample N`")


@dataclass
class EdgeOutcome:
    src: int
    action: str
    dst: int
    outcome: str                       # replayed | diverged | not_drivable
    step: int | None = None            # the failing step k on the path (1-based), if any
    path_len: int = 0                  # spec steps of the path (the edge included)
    reason: str | None = None
    diagnosis: dict | None = None
    explained: str | None = None       # a known reason class (not_drivable)
    via: tuple | None = None           # (src, action, dst) of the failing edge, when earlier


@dataclass
class ReplayRun:
    graph: StateGraph
    outcomes: list[EdgeOutcome] = field(default_factory=list)
    # state -> (parent state, action, event description, params, the driver's state there)
    reached: dict[int, tuple] = field(default_factory=dict)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    events_applied: int = 0
    failures: dict[Edge, tuple[EdgeOutcome, Applied]] = field(default_factory=dict)
    stopped: bool = False

    def path_to(self, s: int) -> list[tuple[int, str, dict, str | None]]:
        """[(state, action, params, event)] of the replayed path from Init to `s`."""
        out = []
        while True:
            parent, action, event, params = self.reached[s]
            out.append((s, action, params, event))
            if parent is None:
                break
            s = parent
        return out[::-1]


def select_edges(g: StateGraph, mode: str, n: int | None = None, seed: int = 0,
                 visited: set[Edge] | None = None) -> list[Edge]:
    edges = [(s, a, d) for s, lst in enumerate(g.succ) for a, d in lst]
    if mode == "all":
        return edges
    if mode == "unvisited":
        if visited is None:
            raise EdgesError("--edges unvisited needs --corpus DIR (the traces whose edges count "
                             "as visited)")
        return [e for e in edges if e not in visited]
    if mode == "sample":
        if n is None:
            raise EdgesError("--edges sample needs N")
        # keyed by the states' values, not TLC's numbering (canon.py): the same edges on
        # any dump of the graph
        return sample_edges(g, min(n, len(edges)), seed)
    raise EdgesError(f"unknown edge selection {mode!r}")


def bfs_tree(g: StateGraph, sources: list[int]) -> dict[int, tuple[int, int] | None]:
    """state -> (parent, action id) on a shortest path from one of `sources` (networkx
    breadth-first layers over the graph).  Among several shortest paths, the canonical one
    (canon.py: each layer in state-key order, successors by label and key), so the path does
    not depend on TLC's state numbering."""
    parent: dict[int, tuple[int, int] | None] = {s: None for s in sources}
    keys = state_keys(g)
    for layer in nx.bfs_layers(g.to_networkx(), sources):
        for p in sorted(layer, key=keys.__getitem__):
            for a, c in ordered_succ(g, p):
                if c not in parent:
                    parent[c] = (p, a)
    return parent


def spec_path(tree: dict, s: int) -> list[tuple[int, int, int]]:
    """The edges of the shortest path from an initial state to `s`."""
    out = []
    while tree[s] is not None:
        p, a = tree[s]
        out.append((p, a, s))
        s = p
    return out[::-1]


def _diagnosis(g: StateGraph, k: int, action: str, applied: Applied, expected: dict,
               model_values: frozenset[str]) -> dict:
    reached = applied.state or {}
    diffs = {}
    for v in g.codec.variables:
        e, r = expected.get(v), reached.get(v)
        if e != r and applied.state is not None:
            diffs[v] = {"expected": to_itf(e), "reached": to_itf(r),
                        "paths": value_diff(e, r, model_values=model_values)}
    if applied.matched:
        summary = f"step {k} ({action}): replayed"
    elif not applied.drivable:
        summary = f"step {k} ({action}): not drivable: {applied.reason}"
    elif applied.event is None:
        summary = f"step {k} ({action}): {applied.reason}"
    else:
        summary = (f"step {k} ({action}): {applied.event} reaches a state differing in "
                   f"{', '.join(sorted(diffs)) or 'nothing'}")
    return {"step": k, "action": action, "event": applied.event,
            "reached_action": applied.label, "summary": summary, "reason": applied.reason,
            "enabled_events": applied.enabled, "silent_events_before": applied.silent,
            "differing_variables": sorted(diffs), "diff": diffs}


Explain = Callable[[StateGraph, Edge, Applied, dict], str | None]


MAX_VARIANTS = 4     # driver states kept per spec state ("all" mode)
CYCLE_LENGTH = 3     # retry: graph cycles back to the source of at most this many edges
CYCLE_VARIANTS = 8   # retry: driver states a source may gain from such cycles
RETRY_LIMIT = 5000   # "all" mode: failing edges retried through cycles
REROUTES = 4         # "sample"/"unvisited": other shortest paths around failed edges per target


def avoiding_path(g: StateGraph, sources: list[int], target: int, bad: set[Edge]
                  ) -> list[Edge] | None:
    """The canonical shortest path from `sources` to `target` that takes no edge of `bad`
    (breadth first, each layer in state-key order: canon.py), or None."""
    keys = state_keys(g)
    parent: dict[int, tuple[int, int] | None] = {x: None for x in sources}
    layer = sorted(sources, key=keys.__getitem__)
    while layer and target not in parent:
        nxt = []
        for p in layer:
            for a, c in ordered_succ(g, p):
                if c not in parent and (p, a, c) not in bad:
                    parent[c] = (p, a)
                    nxt.append(c)
        layer = sorted(nxt, key=keys.__getitem__)
    return spec_path(parent, target) if target in parent else None


def replay(g: StateGraph, driver: Driver, targets: Iterable[Edge], mode: str, *,
           model_values: frozenset[str] = frozenset(), explain: Explain | None = None,
           progress: Callable[[int, int], None] | None = None,
           max_variants: int = MAX_VARIANTS, stop_after: int | None = None,
           reroutes: int = REROUTES, workers: int = 1) -> ReplayRun:
    """Drive `driver` along the graph to every target edge; one EdgeOutcome per target.
    `stop_after` ("all" mode): stop once this many edges diverged (a planted bug's detection;
    the outcomes then cover the edges tried so far, `run.stopped` is set).
    `workers` ("all" mode, a driver with `fork()`: one more implementation process each): the
    edges of a batch of queued states are tried in parallel, each from its source's snapshot,
    and their results taken in the sequential order (`_ParallelAttempts`), so the outcomes are
    the same for any number of workers."""
    t0, c0 = time.monotonic(), time.process_time()
    run = ReplayRun(g)
    acts = g.actions
    keys = state_keys(g)
    targets = sorted(targets, key=lambda e: edge_order(g, e))   # canonical order (canon.py)
    decoded: dict[int, dict] = {}

    def expected(s: int) -> dict:
        d = decoded.get(s)
        if d is None:
            d = decoded[s] = g.state(s)
            if len(decoded) > 200_000:
                decoded.clear()
        return d

    init = driver.reset()
    if hasattr(driver, "canonical_state"):
        init = driver.canonical_state(init)
    snaps: dict[int, list] = {}
    variants: dict[int, set] = {}
    depth: dict[int, int] = {}
    init_states = [s for s in g.initial if expected(s) == init]
    key_of = getattr(driver, "variant_key", None)
    if init_states:
        snap = driver.snapshot()
        key = key_of() if key_of is not None else None
        for s in init_states:
            snaps[s] = [snap]
            variants[s] = {key}
            depth[s] = 0
            run.reached[s] = (None, "Init", None, {})
    reset_to = getattr(driver, "reset_to", None)
    if reset_to is not None:
        # a driver that can start in another of the spec's initial states (elr.py)
        for s in g.initial:
            if s in snaps:
                continue
            st = reset_to(expected(s))
            if st is not None and driver.canonical_state(st) == expected(s):
                snaps[s] = [driver.snapshot()]
                variants[s] = {key_of() if key_of is not None else None}
                depth[s] = 0
                run.reached[s] = (None, "Init", None, {})
                init_states.append(s)
    done: set[Edge] = set()
    replayed: set[Edge] = set()
    counts = Counter()

    def attempt(e: Edge, i: int = 0, pre: tuple | None = None) -> tuple[bool, Applied, bool]:
        """Edge e from the i-th driver state of its source; (matched, applied, a new driver
        state of the destination was queued).  `pre`: the (applied, snapshot after, variant
        key) a worker already computed for it (`_ParallelAttempts`)."""
        s, a, d = e
        if pre is None:
            driver.restore(snaps[s][i])
            step = SpecStep(depth[s] + 1, acts[a], expected(d))
            res = driver.apply(step)
            take, key_now = driver.snapshot, key_of
        else:
            res, after, key_after = pre
            take, key_now = (lambda: after), (lambda: key_after)
        fresh = False
        if res.matched:
            replayed.add(e)
            key = key_now() if key_of is not None else None
            if d not in snaps:
                snaps[d] = [take()]
                variants[d] = {key}
                depth[d] = depth[s] + 1
                run.reached[d] = (s, acts[a], res.event, res.params)
                fresh = True
            elif key_of is not None and key not in variants[d] \
                    and len(snaps[d]) < max_variants:
                variants[d].add(key)
                snaps[d].append(take())
                fresh = True
        elif e not in run.failures:
            oc = _failed(g, e, depth[s] + 1, res, expected(d), model_values, explain)
            run.failures[e] = (oc, res)
            if oc.outcome == "diverged" and stop_after is not None:
                # a planted bug's detection counts only divergences the cycles do not cure
                had = len(snaps.get(d, ()))
                if retry(e):
                    return True, res, len(snaps.get(d, ())) > had
                counts["diverged"] += 1
        return res.matched, res, fresh

    def cycles(s: int, length: int = CYCLE_LENGTH) -> list[list[Edge]]:
        """The graph's paths of at most `length` edges from s back to s, shortest first."""
        out, frontier = [], [[]]
        for _ in range(length):
            nxt = []
            for p in frontier:
                at = p[-1][2] if p else s
                for a, d in ordered_succ(g, at):
                    q = p + [(at, a, d)]
                    (out if d == s else nxt).append(q)
            frontier = nxt
        return out

    def retry(e: Edge) -> bool:
        """Edge e failed from its source's driver states: drive short cycles of the graph
        back to the source first (a lost request and a request timeout give the
        implementation other hidden state in the same spec state), then try e again."""
        s = e[0]
        if key_of is None or s not in snaps:
            return False
        for cyc in cycles(s):
            if len(snaps[s]) >= max_variants + CYCLE_VARIANTS:
                break
            driver.restore(snaps[s][0])
            ok = True
            for j, (x, a, y) in enumerate(cyc):
                if not driver.apply(SpecStep(depth[s] + j + 1, acts[a], expected(y))).matched:
                    ok = False
                    break
            if not ok:
                continue
            key = key_of()
            if key in variants[s]:
                continue
            variants[s].add(key)
            snaps[s].append(driver.snapshot())
            if attempt(e, len(snaps[s]) - 1)[0]:
                return True
        return False

    if mode == "all":
        # breadth first over (state, driver state) pairs: a state's first driver state tries
        # every outgoing edge, a later one (other hidden implementation state, e.g. a pending
        # request or a timer) only the edges not replayed yet; states and successors in
        # canonical order (canon.py), not TLC's numbering
        init_states.sort(key=keys.__getitem__)
        queue = deque((s, 0) for s in init_states)
        n = 0
        pool = _ParallelAttempts(driver, workers) \
            if workers > 1 and stop_after is None and hasattr(driver, "fork") else None
        try:
            while queue:
                if stop_after is not None and counts["diverged"] >= stop_after:
                    run.stopped = True
                    break
                if pool is None:
                    batch = [queue.popleft()]
                    tasks = [(s, i, a, d, None) for s, i in batch
                             for a, d in ordered_succ(g, s)]
                else:
                    # the edges of the queued states, tried in parallel from their sources'
                    # snapshots (each exists: the state was queued), taken in queue order below
                    batch = [queue.popleft() for _ in range(min(len(queue), PARALLEL_BATCH))]
                    todo = [(s, i, a, d) for s, i in batch for a, d in ordered_succ(g, s)
                            if (s, a, d) not in replayed]
                    tasks = [t + (r,) for t, r in zip(todo, pool.run(
                        [(snaps[s][i], SpecStep(depth[s] + 1, acts[a], expected(d)))
                         for s, i, a, d in todo], key_of is not None))]
                for s, i, a, d, pre in tasks:
                    e = (s, a, d)
                    if e in replayed:
                        continue
                    ok, _, fresh = attempt(e, i, pre)
                    if fresh:
                        queue.append((d, len(snaps[d]) - 1))
                    if e not in done:
                        done.add(e)
                        n += 1
                        if progress is not None and n % 5000 == 0:
                            progress(n, len(targets))
        finally:
            if pool is not None:
                pool.close()
        if not run.stopped:
            # the edges still failing: short cycles back to their source first
            again = [e for e in targets if e in run.failures and e not in replayed]
            for e in again[:RETRY_LIMIT]:
                if retry(e):
                    queue = deque([(e[2], len(snaps[e[2]]) - 1)])
                    while queue:          # what the new driver state reaches
                        s, i = queue.popleft()
                        for a, d in ordered_succ(g, s):
                            f = (s, a, d)
                            if f not in replayed and attempt(f, i)[2]:
                                queue.append((d, len(snaps[d]) - 1))
        if run.stopped:
            targets = [e for e in targets if e in done]
        for e in targets:
            s, a, d = e
            if e in replayed:
                run.outcomes.append(EdgeOutcome(s, acts[a], d, "replayed",
                                                path_len=depth[s] + 1))
            elif e in run.failures:
                run.outcomes.append(run.failures[e][0])
    elif not init_states:
        for e in targets:
            s, a, d = e
            run.outcomes.append(_init_mismatch(g, e, init, expected, model_values))
    else:
        tree = bfs_tree(g, init_states)

        def drive(path: list[Edge]) -> Edge | None:
            """Drive a path (from the first state not reached yet); the edge that fails."""
            for pe in path:
                if pe[2] in snaps:
                    continue
                if pe in run.failures and pe not in replayed:
                    return pe
                if not (attempt(pe)[0] or retry(pe)):
                    return pe
            return None

        for i, e in enumerate(targets):
            s, a, d = e
            path = spec_path(tree, s) if s in tree else None
            failed = drive(path) if path is not None else None
            first = failed
            for _ in range(reroutes if failed is not None else 0):
                # another shortest path around the edges that failed (a spec choice the
                # implementation does not make, a timer it fires first): the edge is tried at
                # the end of a path the implementation can drive, as in "all" mode
                bad = {f for f in run.failures if f not in replayed}
                alt = avoiding_path(g, init_states, s, bad)
                if alt is None:
                    break
                failed = drive(alt)
                if failed is None:
                    break
            if failed is not None:
                failed = first
            if path is None:
                run.outcomes.append(_other_init(g, e, init_states))
                continue
            if failed is not None:
                run.outcomes.append(_inherit(run.failures[failed][0], e, acts, len(path) + 1))
                continue
            ok = e in replayed or attempt(e)[0] or retry(e)
            run.outcomes.append(EdgeOutcome(s, acts[a], d, "replayed", path_len=depth[s] + 1)
                                if ok else run.failures[e][0])
            if progress is not None and (i + 1) % 200 == 0:
                progress(i + 1, len(targets))
    if mode == "all":
        missing = [e for e in targets if e not in replayed and e not in run.failures]
        if missing:
            tree = bfs_tree(g, init_states)
            for e in missing:
                s, a, d = e
                if not init_states:
                    run.outcomes.append(_init_mismatch(g, e, init, expected, model_values))
                    continue
                if s not in tree:
                    run.outcomes.append(_other_init(g, e, init_states))
                    continue
                path = spec_path(tree, s)
                failed = next((pe for pe in path if pe[2] not in snaps), None)
                src = run.failures.get(failed) if failed else None
                if src is None:      # every edge into the state failed: take one that did
                    q = failed[2] if failed else s
                    src = next((v for k, v in run.failures.items() if k[2] == q), None)
                if src is None:
                    run.outcomes.append(EdgeOutcome(s, acts[a], d, "diverged", reason=(
                        "the source state was never reached")))
                else:
                    run.outcomes.append(_inherit(src[0], e, acts, len(path) + 1))
    run.seconds = time.monotonic() - t0
    run.cpu_seconds = time.process_time() - c0
    run.events_applied = getattr(driver, "events_applied", 0)
    return run


PARALLEL_BATCH = 64   # queued states whose edges one parallel round tries


class _ParallelAttempts:
    """`workers` drivers (the given one and `driver.fork()`s: one implementation process each)
    trying edges from snapshots in threads (the implementations run in their own processes, so
    the threads overlap them); `run` answers in the order of its tasks, so the engine takes
    the results in the sequential order and the outcomes do not depend on `workers`.  A
    driver's snapshot is a value any of them can restore (the Kafka driver's: the command log
    from init)."""

    def __init__(self, driver, workers: int):
        import queue
        from concurrent.futures import ThreadPoolExecutor

        self.main = driver
        self.forks = [driver.fork() for _ in range(workers - 1)]
        self.free: "queue.SimpleQueue" = queue.SimpleQueue()
        for d in [driver, *self.forks]:
            self.free.put(d)
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="replay")

    def _one(self, snap, step: SpecStep, keyed: bool) -> tuple:
        d = self.free.get()
        try:
            d.restore(snap)
            res = d.apply(step)
            if not res.matched:
                return res, None, None
            return res, d.snapshot(), (d.variant_key() if keyed else None)
        finally:
            self.free.put(d)

    def run(self, tasks: list[tuple], keyed: bool) -> list[tuple]:
        futs = [self.pool.submit(self._one, snap, step, keyed) for snap, step in tasks]
        return [f.result() for f in futs]

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        for d in self.forks:
            d.close()
            self.main.merge_counts(d)


def _failed(g: StateGraph, e: Edge, k: int, res: Applied, expected: dict,
            model_values: frozenset[str], explain: Explain | None) -> EdgeOutcome:
    s, a, d = e
    action = g.actions[a]
    diag = _diagnosis(g, k, action, res, expected, model_values)
    why = explain(g, e, res, diag) if explain is not None and res.drivable else None
    if why is not None and why.startswith("finding "):
        return EdgeOutcome(s, action, d, "diverged", step=k, path_len=k,
                           reason=f"{diag['summary']} ({why})", diagnosis=diag,
                           explained=why.split(":")[0])
    if not res.drivable or why is not None:
        return EdgeOutcome(s, action, d, "not_drivable", step=k, path_len=k,
                           reason=why or res.reason, diagnosis=diag,
                           explained=(why.split(":")[0] if why else "no driver event"))
    return EdgeOutcome(s, action, d, "diverged", step=k, path_len=k, reason=diag["summary"],
                       diagnosis=diag)


def _other_init(g: StateGraph, e: Edge, init_states: list[int]) -> EdgeOutcome:
    s, a, d = e
    return EdgeOutcome(s, g.actions[a], d, "not_drivable", explained="other initial state",
                       reason=("the edge is reachable only from initial states the "
                               "implementation does not start in (it starts in state "
                               f"{', '.join(map(str, init_states))} of the spec's "
                               f"{len(g.initial)} initial states; its configuration fixes "
                               "what the spec leaves open)"))


def _init_mismatch(g: StateGraph, e: Edge, init: dict, expected, model_values) -> EdgeOutcome:
    """Every edge diverges at step 0 when the implementation starts elsewhere."""
    s, a, d = e
    near = min(g.initial, key=lambda x: sum(1 for v in g.codec.variables
                                             if expected(x).get(v) != init.get(v)))
    exp = expected(near)
    diffs = {v: {"expected": to_itf(exp.get(v)), "reached": to_itf(init.get(v)),
                 "paths": value_diff(exp.get(v), init.get(v), model_values=model_values)}
             for v in g.codec.variables if exp.get(v) != init.get(v)}
    diag = {"step": 0, "action": "Init", "event": "reset", "reached_action": "Init",
            "summary": "step 0 (Init): the implementation's initial state is none of the "
                       f"spec's; nearest differs in {', '.join(sorted(diffs))}",
            "reason": None, "enabled_events": [], "silent_events_before": [],
            "differing_variables": sorted(diffs), "diff": diffs}
    return EdgeOutcome(s, g.actions[a], d, "diverged", step=0, reason=diag["summary"],
                       diagnosis=diag)


def _inherit(src: EdgeOutcome, e: Edge, acts: list[str], path_len: int) -> EdgeOutcome:
    """The outcome of edge `e` whose path fails at an earlier edge (`src`)."""
    s, a, d = e
    return EdgeOutcome(s, acts[a], d, src.outcome, step=src.step, path_len=path_len,
                       reason=f"its path fails at step {src.step}: {src.reason}",
                       diagnosis=src.diagnosis, explained=src.explained,
                       via=(src.src, src.action, src.dst))


def summarize(run: ReplayRun) -> dict:
    """Counts per outcome and per action label."""
    by = Counter(o.outcome for o in run.outcomes)
    per: dict[str, Counter] = {}
    for o in run.outcomes:
        per.setdefault(o.action, Counter())[o.outcome] += 1
    total = len(run.outcomes)
    labels = sorted(set(run.graph.actions))
    return {
        "edges": total,
        "replayed": by["replayed"], "diverged": by["diverged"],
        "not_drivable": by["not_drivable"],
        "replayed_fraction": round(by["replayed"] / total, 6) if total else 0.0,
        "per_action": {a: {"edges": sum(per.get(a, Counter()).values()),
                           "replayed": per.get(a, Counter())["replayed"],
                           "diverged": per.get(a, Counter())["diverged"],
                           "not_drivable": per.get(a, Counter())["not_drivable"]}
                       for a in labels},
        "actions_not_replayed": [a for a in labels
                                 if per.get(a) is not None and not per[a]["replayed"]],
        "actions_not_targeted": [a for a in labels if a not in per],
        "explained": dict(sorted(Counter(o.explained for o in run.outcomes
                                         if o.explained).items())),
    }
