"""Schedule coverage: which spec actions and which graph edges a corpus never took.

The validate summary's `coverage` says where the simulator's schedules do not go:

* `spec_actions`: the actions of the config's next-state relation, as TLC labels them (the
  operator applied in each disjunct of NEXT, read from the module text by `spec_actions`);
* `actions_never_taken`: those no step of a valid trace took (neighbourhood mode: from the
  traces' claimed actions; full-graph mode: from the graph edges the traces walked);
* full-graph mode only: `edges_never_taken` (the graph's labelled edges no trace walked), per
  action `edges_by_action` = {action: [edges, taken, frontier]}, where `frontier` counts the
  untaken edges that leave a state the corpus visited: windows the graph shows are reachable
  from where the corpus went, but that no schedule entered (a delay or a fault between a
  request and the decision depending on it, usually).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from kraftcore.paths import SPEC_DIR
from kraftcore.tlc.cfg import parse_cfg
from kraftcore.tlc.manifest import ConfigEntry
from trace_checker.graph import StateGraph

__all__ = ["spec_actions", "next_disjuncts", "graph_coverage", "action_coverage", "coverage_lines"]

_DEF = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*==", re.M)
_QUANT = re.compile(r"^\s*\\[EA]\s[^:]*:\s*")
_APPLY = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\((?:[^()]|\([^()]*\))*\))?\s*$", re.S)


def _strip_comments(text: str) -> str:
    text = re.sub(r"\(\*.*?\*\)", " ", text, flags=re.S)
    return re.sub(r"\\\*[^\n]*", "", text)


def _module_texts(module: Path, folders: Iterable[Path]) -> Iterable[str]:
    """The comment-free text of `module` and of the modules it EXTENDS (found in `folders`),
    the module's own first, each module once."""
    files = {tla.stem: tla for folder in folders for tla in sorted(folder.glob("*.tla"))}
    todo, done = [module.stem], set()
    while todo:
        name = todo.pop(0)
        if name in done or name not in files:
            continue
        done.add(name)
        text = _strip_comments(files[name].read_text(encoding="utf-8", errors="replace"))
        ext = re.search(r"^EXTENDS\s+([^\n]+)", text, re.M)
        if ext:
            todo.extend(x.strip() for x in ext.group(1).split(","))
        yield text


def _definitions(module: Path, folders: Iterable[Path]) -> dict[str, str]:
    """Top-level definitions `Name == body` of `module` and the modules it EXTENDS (found in
    `folders`), the module's own first."""
    defs: dict[str, str] = {}
    for text in _module_texts(module, folders):
        marks = list(_DEF.finditer(text))
        for m, nxt in zip(marks, marks[1:] + [None]):
            body = text[m.end():nxt.start() if nxt else len(text)]
            body = re.split(r"^(?:-{4,}|={4,}|ASSUME|ASSUMPTION|VARIABLES?\b|CONSTANTS?\b|"
                            r"THEOREM|INSTANCE|LOCAL|RECURSIVE)", body, maxsplit=1,
                            flags=re.M)[0]
            defs.setdefault(m.group(1), body)
    return defs


def _variables(module: Path, folders: Iterable[Path]) -> set[str]:
    """The state variables declared (VARIABLE / VARIABLES) in `module` and what it EXTENDS."""
    out: set[str] = set()
    for text in _module_texts(module, folders):
        for m in re.finditer(r"^VARIABLES?\s+((?:[A-Za-z_][A-Za-z0-9_]*\s*,\s*)*"
                             r"[A-Za-z_][A-Za-z0-9_]*)", text, re.M):
            out.update(v.strip() for v in m.group(1).split(","))
    return out


def _split_top(body: str, op: str) -> list[str]:
    """The top-level `op` (`\\/` or `/\\`) operands of a body (brackets respected)."""
    out, cur, depth, i = [], [], 0, 0
    while i < len(body):
        c = body[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if depth == 0 and body.startswith(op, i):
            out.append("".join(cur))
            cur = []
            i += 2
            continue
        cur.append(c)
        i += 1
    out.append("".join(cur))
    return [d for d in (x.strip() for x in out) if d]


def _disjuncts(body: str) -> list[str]:
    """The top-level `\\/` disjuncts of a definition body (brackets respected)."""
    return _split_top(body, "\\/")


def _alternatives(defs: dict[str, str], nxt: str) -> tuple[list[str], str | None]:
    """The disjuncts of the next-state relation `nxt`, and the conjunction every one of them is
    taken with (None: none).  `N == /\\ (\\/ A \\/ B) /\\ C` (KRaftHistory's HistoryNext ==
    (Next \\/ LoseDisk) /\\ RecordLeaders) is read as `(A /\\ C) \\/ (B /\\ C)`, a disjunct that
    is a defined disjunction (Next) replaced by its disjuncts: TLC labels such an N's every
    edge `N`, so a checker that must tell the actions apart distributes C over them itself."""
    body = defs[nxt]
    if len(_disjuncts(body)) != 1 or "\\/" not in body:
        return _disjuncts(body), None
    parts = _split_top(body, "/\\")
    if len(parts) < 2:
        return _disjuncts(body), None
    split = [_disjuncts(_unparen(c)) for c in parts]
    which = [k for k, d in enumerate(split) if len(d) > 1]
    if len(which) != 1:
        return _disjuncts(body), None
    extra = " /\\ ".join(_unparen(c) for k, c in enumerate(parts) if k != which[0])
    if "\n" in extra:
        return _disjuncts(body), None
    flat: list[str] = []
    todo = list(split[which[0]])
    while todo:
        d = todo.pop(0)
        if d in defs and len(_disjuncts(defs[d])) > 1:
            todo[:0] = _disjuncts(defs[d])
        else:
            flat.append(d)
    return flat, extra


def _unparen(text: str) -> str:
    text = text.strip()
    if text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        return text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += c in "([{"
        depth -= c in ")]}"
        if depth < 0:
            return False
    return depth == 0


_BOX = re.compile(r"\[\]\s*\[\s*([A-Za-z_][A-Za-z0-9_]*)\s*\]_")


def _spec_box(cfg, defs: dict[str, str]) -> tuple[str, re.Match] | None:
    """The definition of a config's SPECIFICATION holding its `[][N]_vars`, found through the
    definitions it is made of (LiveSpec == Spec /\\ Fairness, Spec == Init /\\ [][Next]_vars),
    and that match; None if there is none."""
    todo, seen = [(cfg.sections.get("SPECIFICATION") or ["Spec"])[0]], set()
    while todo and len(seen) < 50:
        name = todo.pop(0)
        if name in seen or name not in defs:
            continue
        seen.add(name)
        m = _BOX.search(defs[name])
        if m:
            return defs[name], m
        todo.extend(x for x in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", defs[name]) if x in defs)
    return None


def _next_name(cfg, defs: dict[str, str]) -> str | None:
    """The next-state relation a config runs: its NEXT, or the `[][N]_vars` of its
    SPECIFICATION (_spec_box)."""
    nxt = (cfg.sections.get("NEXT") or [None])[0]
    if nxt is not None:
        return nxt
    box = _spec_box(cfg, defs)
    return box[1].group(1) if box else None


def _init_name(cfg, defs: dict[str, str]) -> str | None:
    """The initial predicate a config runs: its INIT, or the conjunct `I` of its SPECIFICATION's
    `I /\\ [][N]_vars` (_spec_box; HistorySpec == HistoryInit /\\ [][HistoryNext]_historyVars)
    when it is one identifier."""
    init = (cfg.sections.get("INIT") or [None])[0]
    if init is not None:
        return init
    box = _spec_box(cfg, defs)
    if box is None:
        return None
    body, m = box
    before = re.sub(r"/\\\s*$", "", body[:m.start()].strip()).strip()
    before = re.sub(r"^/\\", "", before).strip()
    return before if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", before) else None


def _relation(entry: ConfigEntry, find) -> str | None:
    try:
        cfg = parse_cfg(entry.cfg_path)
        return find(cfg, _definitions(entry.module_path, [entry.module_path.parent, SPEC_DIR]))
    except Exception:  # noqa: BLE001 - a config TLC reads will say what is wrong itself
        return None


def next_relation(entry: ConfigEntry) -> str | None:
    """The name of the next-state relation of a config (see _next_name); None if unreadable."""
    return _relation(entry, _next_name)


def init_relation(entry: ConfigEntry) -> str | None:
    """The name of the initial predicate of a config (see _init_name); None if unreadable."""
    return _relation(entry, _init_name)


def spec_actions(entry: ConfigEntry) -> list[str]:
    """The action labels of the config's next-state relation, from the module text: for each
    disjunct of NEXT (quantifiers stripped) the operator it applies; a disjunct that names
    another definition made of disjuncts (MCNext == Next \\/ ...) is expanded.  Empty when
    the relation cannot be read this way (the summary then lists only what it saw)."""
    try:
        cfg = parse_cfg(entry.cfg_path)
    except Exception:  # noqa: BLE001 - coverage is a report: never fail validation on it
        return []
    defs = _definitions(entry.module_path, [entry.module_path.parent, SPEC_DIR])
    nxt = _next_name(cfg, defs)
    if nxt is None or nxt not in defs:
        return []
    labels: list[str] = []
    seen: set[str] = set()
    variables = _variables(entry.module_path, [entry.module_path.parent, SPEC_DIR])
    memo: dict[str, bool] = {}

    def stateful(expr: str, depth: int = 0) -> bool:
        """Does `expr` depend on a state variable (through definitions too)?"""
        for ident in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr)):
            if ident in variables:
                return True
            if ident in defs and depth < 8:
                if ident not in memo:
                    memo[ident] = False          # cycles: assume constant
                    memo[ident] = stateful(defs[ident], depth + 1)
                if memo[ident]:
                    return True
        return False

    def walk(name: str) -> None:
        # TLC's labels: through disjunctions, existential quantifiers over constant sets and
        # applications of defined operators, the innermost operator whose body is none of these
        if name in seen:
            return
        seen.add(name)
        for d in (_alternatives(defs, name)[0] if name == nxt else _disjuncts(defs[name])):
            q = _QUANT.match(d)
            while q and not stateful(q.group(0)):
                d = d[q.end():]
                q = _QUANT.match(d)
            m = None if q else _APPLY.match(d)
            if m and m.group(1) in defs:
                walk(m.group(1))
            elif name != nxt and name not in labels:
                labels.append(name)
    walk(nxt)
    return labels


def next_disjuncts(entry: ConfigEntry) -> list[tuple[str, str]] | None:
    """The top-level disjuncts of the config's next-state relation as (label, text), when each
    is one line that TLC labels with its own operator's name only: the labels, in order, are
    exactly spec_actions' reading of the relation (no disjunct is split further, no two share
    a name).  None otherwise.  Neighbourhood mode's targeted runs use them to compute, for a
    source state, only the successors of the actions its observed steps claim (the other
    labels can never make those steps valid; neighbourhood.py)."""
    try:
        cfg = parse_cfg(entry.cfg_path)
    except Exception:  # noqa: BLE001 - None: the caller uses the whole relation
        return None
    defs = _definitions(entry.module_path, [entry.module_path.parent, SPEC_DIR])
    nxt = _next_name(cfg, defs)
    if nxt is None or nxt not in defs:
        return None
    alternatives, extra = _alternatives(defs, nxt)
    out: list[tuple[str, str]] = []
    for d in alternatives:
        if "\n" in d:
            return None
        rest, q = d, _QUANT.match(d)
        while q:
            rest = rest[q.end():]
            q = _QUANT.match(rest)
        m = _APPLY.match(rest)
        if m is None or m.group(1) not in defs:
            return None
        out.append((m.group(1), d if extra is None else f"({d}) /\\ {extra}"))
    names = [n for n, _ in out]
    if len(set(names)) != len(names) or spec_actions(entry) != names:
        return None
    return out


def next_is_distributed(entry: ConfigEntry) -> bool:
    """Is the config's next-state relation a conjunction that TLC labels as one action
    (_alternatives), so that only next_disjuncts' relabelled relation tells its actions apart?"""
    def distributed(cfg, defs) -> bool:
        nxt = _next_name(cfg, defs)
        return nxt is not None and nxt in defs and _alternatives(defs, nxt)[1] is not None
    return bool(_relation(entry, distributed))


def graph_coverage(g: StateGraph, paths: Iterable[list[int]], actions: Iterable[str] = ()
                   ) -> dict:
    """Coverage of a complete graph by the walked state paths of the valid traces."""
    states: set[int] = set()
    taken: set[tuple[int, int, int]] = set()
    for p in paths:
        states.update(p)
        for a, b in zip(p, p[1:]):
            for aid, d in g.succ[a]:
                if d == b:
                    taken.add((a, aid, b))
    per = {name: [0, 0, 0] for name in g.actions}
    for s, lst in enumerate(g.succ):
        visited = s in states
        for aid, d in lst:
            row = per[g.actions[aid]]
            row[0] += 1
            if (s, aid, d) in taken:
                row[1] += 1
            elif visited:
                row[2] += 1
    cov = g.coverage(states, {(a, g.actions[aid], b) for a, aid, b in taken})
    names = list(dict.fromkeys(list(actions) + sorted(g.actions)))
    seen = {g.actions[aid] for _, aid, _ in taken}
    cov.update({
        "spec_actions": names,
        "actions_never_taken": [a for a in names if a not in seen],
        "edges_never_taken": cov["edges"] - cov["edges_visited"],
        "edges_by_action": {a: per[a] for a in sorted(per)},
        "frontier_edges": sum(r[2] for r in per.values()),
    })
    return cov


def action_coverage(step_actions: Counter, actions: Iterable[str]) -> dict:
    """Neighbourhood mode: the spec actions the valid traces' steps took, and those never."""
    names = list(dict.fromkeys(list(actions) + sorted(a for a in step_actions if a != "Init")))
    return {"spec_actions": names,
            "actions_taken": {a: step_actions.get(a, 0) for a in names},
            "actions_never_taken": [a for a in names if not step_actions.get(a)]}


def coverage_lines(summary: dict) -> list[str]:
    """Human lines for the validate summary."""
    c = summary.get("coverage")
    if not c:
        return []
    lines = []
    if "states" in c:
        lines.append(f"coverage: {c['states_visited']:,}/{c['states']:,} states, "
                     f"{c['edges_visited']:,}/{c['edges']:,} edges ({c['edges_never_taken']:,} "
                     f"never taken, {c['frontier_edges']:,} of them from visited states)")
    never = c.get("actions_never_taken") or []
    lines.append("spec actions never taken: " + (", ".join(never) if never else "none"))
    per = c.get("edges_by_action")
    if per:
        top = sorted(((r[2], a) for a, r in per.items() if r[2]), reverse=True)[:5]
        if top:
            lines.append("untaken edges from visited states, by action: "
                         + ", ".join(f"{a} {n:,}" for n, a in top))
    return lines
