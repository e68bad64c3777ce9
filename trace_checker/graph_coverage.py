"""What a dumped state graph reaches (issue 36): its actions and the KIPs' protocol situations.

Full-graph mode (fullgraph.py) can only flag a bug whose precondition lies inside the graph.
This module reads a graph index (the cached one: `fullgraph.load_graph`, never the dump again)
and reports, for one config:

* every action label of the config's next-state relation (`coverage.spec_actions`) with the
  number of labelled edges it has in the graph (0: the graph never takes it), and any label the
  graph has that the relation does not name;
* every protocol situation of the config's protocol (`SITUATIONS`): how many states (for a
  situation of a state) or edges (for a situation of a step) show it, and the BFS depth of the
  first one (the length of a shortest behaviour from an initial state reaching it).

Situations are decided on decoded values only (the message consumed by a step is the one whose
count in the network bag drops), so they do not depend on how TLC prints states.  KIP-595 ones
apply to every graph with the KRaft variables (KRaft.tla, KRaftReassign.tla), KIP-966 ones to
ELR.tla graphs.  `markdown_tables` prints the tables of docs/graph-coverage.md.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kraftcore.tlc.cfg import parse_cfg
from kraftcore.tlc.manifest import ConfigEntry
from kraftcore.values import Fn
from trace_checker.coverage import spec_actions
from trace_checker.codec import Codec
from trace_checker.graph import StateGraph

__all__ = ["Situation", "SITUATIONS", "GraphCoverage", "SituationCount", "graph_coverage_of",
           "family_of", "markdown_tables", "parse_markdown_tables", "report_cells", "depths",
           "graph_configs", "cached_graph", "graph_of_trace"]

NO_DIVERGENCE = -1          # KRaftLog!NoDivergence.epoch


@dataclass(frozen=True)
class Situation:
    key: str
    family: str             # "kraft" (KIP-595 variables) | "elr" (KIP-966 variables)
    title: str
    kip: str
    kind: str               # "edge" (a step shows it) | "state"


SITUATIONS: tuple[Situation, ...] = (
    Situation("diverging-epoch-truncation", "kraft",
              "DivergingEpoch with a real divergence: a follower truncates its log on a "
              "FetchResponse whose DivergingEpoch is set",
              'KIP-595 §"FetchRequest Handling" 3, §"FetchResponse Handling" 2', "edge"),
    Situation("truncation-to-common-prefix", "kraft",
              "... truncating to a non-empty common prefix (DivergingEpoch.EndOffset > 0)",
              'KIP-595 §"FetchResponse Handling" 2', "edge"),
    Situation("truncation-of-record-held-elsewhere", "kraft",
              "... removing a record another replica holds at the same offset",
              'KIP-595 §"Fetch" (log reconciliation)', "edge"),
    Situation("vote-by-log-length", "kraft",
              "a vote decided by log length at equal last epochs (voter free to vote, "
              "candidate's LastOffsetEpoch = voter's last epoch, LastOffset != voter's end offset)",
              'KIP-595 §"Vote Request Handling" 4b', "edge"),
    Situation("vote-refused-shorter-log", "kraft",
              "... refused: the candidate's log is shorter",
              'KIP-595 §"Vote Request Handling" 4b', "edge"),
    Situation("vote-granted-longer-log", "kraft",
              "... granted: the candidate's log is longer",
              'KIP-595 §"Vote Request Handling" 4b', "edge"),
    Situation("observer-fetches-records", "kraft",
              "an observer (a replica outside the voter set) appends records from a "
              "FetchResponse",
              'KIP-595 §"Key Concepts" (Observer), §"Fetch"', "edge"),
    Situation("empty-isr-nonempty-elr", "elr",
              "an empty ISR with a non-empty ELR",
              'KIP-966 §"Eligible Leader Replicas", §"Controller behaviors" 2', "state"),
    Situation("elr-member-elected", "elr",
              "a leaderless partition elects a member of its ELR",
              'KIP-966 §"Controller behaviors" 3', "edge"),
    Situation("unclean-recovery-balanced", "elr",
              "a Balanced unclean recovery completes (CompleteUncleanRecovery)",
              'KIP-966 §"Unclean recovery" (Balanced)', "edge"),
    Situation("unclean-recovery-aggressive", "elr",
              "an Aggressive unclean recovery completes (CompleteUncleanRecovery)",
              'KIP-966 §"Unclean recovery" (Aggressive)', "edge"),
)


@dataclass
class SituationCount:
    key: str
    title: str
    kip: str
    kind: str
    count: int = 0                  # states or edges showing it
    first_depth: int | None = None  # BFS depth of the first state / edge source showing it

    @property
    def reached(self) -> bool:
        return self.count > 0

    def to_json(self) -> dict:
        return {"key": self.key, "title": self.title, "kip": self.kip, "kind": self.kind,
                "reached": self.reached, "count": self.count, "first_depth": self.first_depth}


@dataclass
class GraphCoverage:
    config: str
    module: str
    protocol: str
    family: str
    states: int
    edges: int
    actions: dict[str, int]                 # spec action -> labelled edges in the graph
    unexpected_labels: dict[str, int]       # labels of the graph the relation does not name
    situations: list[SituationCount]
    depth: int                              # the largest BFS depth
    meta: dict = field(default_factory=dict)

    @property
    def actions_missing(self) -> list[str]:
        return [a for a, n in self.actions.items() if n == 0]

    @property
    def situations_missing(self) -> list[str]:
        return [s.key for s in self.situations if not s.reached]

    def to_json(self) -> dict:
        return {"config": self.config, "module": self.module, "protocol": self.protocol,
                "family": self.family, "states": self.states, "edges": self.edges,
                "depth": self.depth, "actions": self.actions,
                "actions_missing": self.actions_missing,
                "unexpected_labels": self.unexpected_labels,
                "situations": [s.to_json() for s in self.situations],
                "situations_missing": self.situations_missing, **self.meta}


# ---- helpers over decoded values ------------------------------------------------------------

def family_of(g: StateGraph) -> str:
    """"elr" for ELR.tla's variables, "kraft" for KRaft.tla's (KRaftReassign included)."""
    v = set(g.codec.variables)
    if {"isr", "elr", "leader", "lastKnownElr"} <= v:
        return "elr"
    if {"log", "msgs", "currentEpoch", "votedId", "leaderId"} <= v:
        return "kraft"
    raise ValueError(f"graph of {g.meta.get('config', '?')}: variables {sorted(v)} are neither "
                     "KRaft.tla's nor ELR.tla's")


def depths(g: StateGraph) -> list[int]:
    """BFS depth of every state from the initial states (-1: unreachable, never for a dump)."""
    d = [-1] * len(g)
    q = deque()
    for s in g.initial:
        if d[s] < 0:
            d[s] = 0
            q.append(s)
    succ = g.succ
    while q:
        s = q.popleft()
        nd = d[s] + 1
        for _, t in succ[s]:
            if d[t] < 0:
                d[t] = nd
                q.append(t)
    return d


def _bag(value) -> dict:
    """A bag (function message -> copies) as a dict; the empty bag decodes as <<>>."""
    return dict(value) if isinstance(value, Fn) else {}


def _last_epoch(log: Sequence) -> int:
    return log[-1]["epoch"] if log else 0


class _Values:
    """Decoded values of one variable, per value id (decoded once)."""

    def __init__(self, g: StateGraph, var: str, conv: Callable = lambda v: v):
        self.g, self.pos, self.conv = g, g.codec.position[var], conv
        self.memo: dict[int, object] = {}

    def of(self, s: int):
        vid = self.g.states[s][self.pos]
        v = self.memo.get(vid, self)
        if v is self:
            v = self.memo[vid] = self.conv(self.g.codec.value(self.pos, vid))
        return v


def _diff_cache(msgs: _Values):
    """(consumed, produced) messages of a step s -> t: the messages whose count drops / grows."""
    memo: dict[tuple[int, int], tuple[list, list]] = {}

    def diff(s: int, t: int) -> tuple[list, list]:
        key = (msgs.g.states[s][msgs.pos], msgs.g.states[t][msgs.pos])
        r = memo.get(key)
        if r is None:
            a, b = msgs.of(s), msgs.of(t)
            r = memo[key] = ([m for m, n in a.items() if b.get(m, 0) < n],
                             [m for m, n in b.items() if a.get(m, 0) < n])
        return r
    return diff


# ---- the situations of each family ----------------------------------------------------------

def _kraft(g: StateGraph, entry: ConfigEntry | None, hit: Callable[[str, int], None]) -> None:
    log = _Values(g, "log")
    msgs = _Values(g, "msgs", _bag)
    epoch = _Values(g, "currentEpoch")
    voted = _Values(g, "votedId")
    leader = _Values(g, "leaderId")
    voter_set = _Values(g, "voterSet") if "voterSet" in g.codec.position else None
    boot_voters = _constant(entry, "Voters")
    diff = _diff_cache(msgs)

    def is_observer(s: int, i) -> bool:
        if voter_set is not None:
            return i not in voter_set.of(s)[i]
        return boot_voters is not None and i not in boot_voters

    fetch = g.action_ids.get("ReceiveFetchResponse")
    vote = g.action_ids.get("ReceiveVoteRequest")
    for s, lst in enumerate(g.succ):
        for aid, t in lst:
            if aid == fetch:
                consumed, _ = diff(s, t)
                for m in consumed:
                    if m["type"] != "FetchResponse":
                        continue
                    i = m["dest"]
                    before, after = log.of(s)[i], log.of(t)[i]
                    if len(after) > len(before) and is_observer(s, i):
                        hit("observer-fetches-records", s)
                    if m["divergingEpoch"]["epoch"] == NO_DIVERGENCE or len(after) >= len(before):
                        continue
                    hit("diverging-epoch-truncation", s)
                    if after:
                        hit("truncation-to-common-prefix", s)
                    logs = log.of(s)
                    if any(len(logs[j]) > k and logs[j][k] == before[k]
                           for j in logs if j != i for k in range(len(after), len(before))):
                        hit("truncation-of-record-held-elsewhere", s)
            elif aid == vote:
                consumed, produced = diff(s, t)
                for m in consumed:
                    if m["type"] != "VoteRequest":
                        continue
                    j, c = m["dest"], m["src"]
                    resp = [r for r in produced if r["type"] == "VoteResponse"
                            and r["src"] == j and r["dest"] == c and r["error"] == "NONE"]
                    if not resp or m["epoch"] < epoch.of(s)[j]:
                        continue
                    bump = m["epoch"] > epoch.of(s)[j]
                    if not bump and (voted.of(s)[j] != "Nil" or leader.of(s)[j] != "Nil"):
                        continue        # the vote is decided by the earlier vote / the leader
                    mine = log.of(s)[j]
                    if m["lastOffsetEpoch"] != _last_epoch(mine) or m["lastOffset"] == len(mine):
                        continue
                    hit("vote-by-log-length", s)
                    granted = resp[0]["voteGranted"]
                    if m["lastOffset"] < len(mine) and not granted:
                        hit("vote-refused-shorter-log", s)
                    elif m["lastOffset"] > len(mine) and granted:
                        hit("vote-granted-longer-log", s)


def _elr(g: StateGraph, entry: ConfigEntry | None, hit: Callable[[str, int], None],
         hit_state: Callable[[str, int], None]) -> None:
    isr = _Values(g, "isr")
    elr = _Values(g, "elr")
    leader = _Values(g, "leader")
    for s in range(len(g)):
        if not isr.of(s) and elr.of(s):
            hit_state("empty-isr-nonempty-elr", s)
    strategy = _constant(entry, "RecoveryStrategy")
    complete = g.action_ids.get("CompleteUncleanRecovery")
    for s, lst in enumerate(g.succ):
        was = leader.of(s)
        for aid, t in lst:
            now = leader.of(t)
            if now != was and was == "NoBroker" and now in elr.of(s):
                hit("elr-member-elected", s)
            if aid == complete and strategy in ("Balanced", "Aggressive"):
                hit(f"unclean-recovery-{strategy.lower()}", s)


def _constant(entry: ConfigEntry | None, name: str):
    if entry is None:
        return None
    try:
        return parse_cfg(entry.cfg_path).constants.get(name)
    except Exception:  # noqa: BLE001 - a config TLC ran is readable; None: situation not decided
        return None


# ---- the report -----------------------------------------------------------------------------

def graph_coverage_of(g: StateGraph, entry: ConfigEntry | None = None,
                      actions: Iterable[str] | None = None) -> GraphCoverage:
    """Coverage of a complete graph: its actions (those of `entry`'s next-state relation, or
    `actions`) and the situations of its family."""
    if not g.complete:
        raise ValueError("coverage is defined for complete graphs (a full dump) only")
    family = family_of(g)
    names = list(actions) if actions is not None else (spec_actions(entry) if entry else [])
    per_label: dict[str, int] = {a: 0 for a in g.actions}
    for lst in g.succ:
        for aid, _ in lst:
            per_label[g.actions[aid]] += 1
    d = depths(g)
    rows = {s.key: SituationCount(s.key, s.title, s.kip, s.kind)
            for s in SITUATIONS if s.family == family}
    seen_states: dict[str, set[int]] = {k: set() for k in rows}

    def hit(key: str, s: int) -> None:       # one edge (from s) shows it
        r = rows[key]
        r.count += 1
        if r.first_depth is None or d[s] < r.first_depth:
            r.first_depth = d[s]

    def hit_state(key: str, s: int) -> None:
        if s not in seen_states[key]:
            seen_states[key].add(s)
            hit(key, s)

    if family == "kraft":
        _kraft(g, entry, hit)
    else:
        _elr(g, entry, hit, hit_state)
    meta = {k: g.meta[k] for k in ("tlc_distinct_states", "merged_states") if k in g.meta}
    dump = g.meta.get("dump")
    if dump and Path(dump).is_file():
        meta["dump_bytes"] = Path(dump).stat().st_size
    return GraphCoverage(
        config=entry.name if entry else str(g.meta.get("config", "?")),
        module=entry.module if entry else str(g.meta.get("module", "?")),
        protocol=entry.protocol if entry else "", family=family, states=len(g),
        edges=g.edge_count,
        actions={a: per_label.get(a, 0) for a in names},
        unexpected_labels={a: n for a, n in sorted(per_label.items()) if a not in names},
        situations=list(rows.values()), depth=max(d, default=0), meta=meta)


def graph_of_trace(trace) -> StateGraph:
    """A trace (traces.Trace, every step observing every variable) as a complete graph: its
    states, and one edge per step labelled with the step's action.  `graph_coverage_of` on it
    tells which situations the trace shows (to pick, from a simulated corpus, the traces that
    exercise a situation a full graph cannot hold)."""
    from kraftcore.values import from_itf

    if trace.partial:
        raise ValueError(f"{trace.path}: a partial trace does not determine its states")
    g = StateGraph(Codec(sorted(trace.variables)), complete=True,
                   meta={"config": trace.trace_id})
    prev = None
    for step in trace.steps:
        s = g.add_state(g.codec.encode({v: from_itf(x) for v, x in step.state.items()}))
        if prev is None:
            g.initial.append(s)
        else:
            g.add_edge(prev, step.action, s)
        prev = s
    g.expanded.update(range(len(g)))
    return g


def graph_configs(entries: Iterable[ConfigEntry]) -> list[ConfigEntry]:
    """The graph configs of a manifest: bfs, expect ok, named `*-graph-*` (the suite's
    convention for the no-symmetry configs full-graph mode dumps)."""
    return [e for e in entries if "-graph-" in e.name and e.mode == "bfs" and e.expect == "ok"]


def cached_graph(entry: ConfigEntry) -> StateGraph | None:
    """The cached index of `entry`'s graph, or None when it was never built (no TLC run)."""
    from trace_checker.cache import load_cached
    from trace_checker.fullgraph import check_graph_config, graph_key

    check_graph_config(entry)
    return load_cached(graph_key(entry))


def _cell(n: int | None) -> str:
    return "—" if not n else f"{n:,}"


def report_cells(r: GraphCoverage) -> dict[str, str]:
    """The cells of one config's column of docs/graph-coverage.md, by row label: states,
    edges, each label (`Name`: its edges) and each situation (`key (kinds)`: its count)."""
    cells = {"states": f"{r.states:,}", "edges": f"{r.edges:,}"}
    for a, n in list(r.actions.items()) + list(r.unexpected_labels.items()):
        cells[f"`{a}`"] = _cell(n)
    for s in r.situations:
        cells[f"{s.key} ({s.kind}s)"] = _cell(s.count)
    return cells


def markdown_tables(reports: Sequence[GraphCoverage]) -> str:
    """One table per family (KIP-595 variables, KIP-966 variables) whose columns are the
    configs and whose rows are the sizes, every action label (labelled edges; "—" never,
    "n/a" not in that config's relation) and every situation (states or edges showing it), as
    in docs/graph-coverage.md."""
    out: list[str] = []
    for family in ("kraft", "elr"):
        cols = [(r, report_cells(r)) for r in reports if r.family == family]
        if not cols:
            continue
        rows = list(dict.fromkeys(k for _, c in cols for k in c if not k[0].isalpha()
                                  or k in ("states", "edges")))
        rows = ["states", "edges"] + [k for k in rows if k not in ("states", "edges")]
        rows += [f"{s.key} ({s.kind}s)" for s in SITUATIONS if s.family == family]
        out += ["| | " + " | ".join(f"`{r.config}`" for r, _ in cols) + " |",
                "|---|" + "---:|" * len(cols)]
        for k in rows:
            out.append(f"| {k} | " + " | ".join(c.get(k, "n/a") for _, c in cols) + " |")
        out.append("")
    return "\n".join(out)


def parse_markdown_tables(text: str) -> dict[str, dict[str, str]]:
    """{config: {row label: cell}} from tables printed by `markdown_tables` (the inverse, for
    the test that the docs match the graphs)."""
    out: dict[str, dict[str, str]] = {}
    cols: list[str] = []
    for line in text.splitlines():
        if not line.startswith("|"):
            cols = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "" and all(c.startswith("`") and c.endswith("`") for c in cells[1:]):
            cols = [c.strip("`") for c in cells[1:]]
            for c in cols:
                out.setdefault(c, {})
        elif cols and not set(cells[0]) <= set("-:"):
            for c, v in zip(cols, cells[1:]):
                out[c][cells[0]] = v
    return out
