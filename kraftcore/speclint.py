"""Review checks on the TLA+ specs, using the `tla` Python parser's syntax tree.

What a design reviewer and the trace checker rely on, checked mechanically:

- every disjunct of Next is a *named* action: a zero-arity operator, or an operator applied under
  `\\E x \\in S` where S mentions no state variable.  TLC labels an existential over a
  state-dependent set written inline in Next as "Next", which would make state-graph edges
  anonymous (the trace checker matches claimed actions against edge labels);
- every action named in Next has a comment citing the KIP section it models ("KIP-...") in the
  lines just above its definition or inside it;
- a protocol module holds no model-checking artefacts (symmetry, Permutations); bounds and
  symmetry belong to the MC modules and the configs.

It also reports each module's VARIABLES and the action names of Next, which other stages use
(the refimpl's mapping onto spec variables is tested against this list).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import tla



def _comment_above(lines: list[str], first: int) -> list[str]:
    """The comment block directly above line `first` (1-based): comment and blank lines up to the
    previous line of code."""
    out: list[str] = []
    in_block = False
    for ln in reversed(lines[: first - 1]):
        s = ln.strip()
        if s.endswith("*)"):
            in_block = "(*" not in s
            out.append(ln)
        elif in_block:
            out.append(ln)
            in_block = "(*" not in s
        elif s.startswith("\\*") or s == "" or set(s) <= set("-=\\* "):
            out.append(ln)
        else:
            break
    return out


@dataclass
class LintIssue:
    module: str
    line: int          # 1-based
    message: str

    def __str__(self) -> str:
        return f"{self.module}.tla:{self.line}: {self.message}"


@dataclass
class ModuleReport:
    module: str
    path: str
    variables: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    issues: list[LintIssue] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"module": self.module, "path": self.path, "variables": self.variables,
                "actions": self.actions, "issues": [str(i) for i in self.issues]}


def _children(node):
    if isinstance(node, list):
        yield from node
    elif isinstance(node, tuple) and hasattr(node, "_fields"):
        for f in node._fields:
            v = getattr(node, f)
            if isinstance(v, (list, tuple)):
                yield v


def _walk(node):
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, tuple) and hasattr(n, "_fields"):
            yield n
        stack.extend(_children(n))


def _applied_names(node) -> set[str]:
    return {n.operator for n in _walk(node)
            if type(n).__name__ == "OperatorApplication" and isinstance(n.operator, str)}


def _line(node) -> int:
    start = getattr(node, "start", None)
    return (start.line + 1) if start is not None else 0


def parse_module(path: Path):
    """Parse a module with the `tla` parser; raises ValueError naming the file on failure."""
    try:
        return tla.parse(path.read_text(encoding="utf-8"))
    except Exception as e:  # the parser raises several exception types
        raise ValueError(f"{path}: the tla parser cannot read this module: {e}") from None


def _definitions(tree) -> dict[str, object]:
    return {u.name: u for u in tree.units
            if type(u).__name__ == "OperatorDefinition" and isinstance(getattr(u, "name", None), str)}


def _variables(tree) -> list[str]:
    out: list[str] = []
    for u in tree.units:
        if type(u).__name__ == "Variables":
            out += [n.operator for n in u.names]
    return out


def _disjuncts(node):
    t = type(node).__name__
    if t == "VerticalList" and node.operator == "\\/":
        for item in node.arguments:
            yield from _disjuncts(item.expression)
    elif t == "VerticalItem":
        yield from _disjuncts(node.expression)
    elif t == "OperatorApplication" and node.operator == "\\/" and node.arguments:
        for a in node.arguments:
            yield from _disjuncts(a)
    elif t == "Parentheses":
        yield from _disjuncts(node.expression)
    else:
        yield node


def _next_actions(defn, state_vars: set[str], module: str, issues: list[LintIssue]) -> list[str]:
    actions: list[str] = []
    for d in _disjuncts(defn.definiens):
        t = type(d).__name__
        if t == "OperatorApplication" and isinstance(d.operator, str) and d.operator[0].isalpha():
            actions.append(d.operator)
        elif t == "Quantification" and d.quantifier == "\\E":
            bound_vars = set()
            for decl in d.declarations:
                args = getattr(decl, "arguments", None) or []
                bound = args[1:] if len(args) > 1 else []
                used = set().union(*(_applied_names(b) for b in bound)) if bound else set()
                bound_vars |= used & state_vars
            if bound_vars:
                issues.append(LintIssue(module, _line(d), (
                    "Next has an inline \\E over a set that depends on state variables "
                    f"({', '.join(sorted(bound_vars))}); TLC labels its edges 'Next' - wrap it in "
                    "a named zero-arity operator")))
            for inner in _disjuncts(d.predicate):
                if type(inner).__name__ == "OperatorApplication" and isinstance(inner.operator, str) \
                        and inner.operator[0].isalpha():
                    actions.append(inner.operator)
                else:
                    issues.append(LintIssue(module, _line(inner),
                                            "Next quantifies over an inline formula; name the action"))
        else:
            issues.append(LintIssue(module, _line(d), "Next has an inline disjunct; name the action"))
    return list(dict.fromkeys(actions))


def lint_module(path: Path, protocol: bool, extra_definitions: dict | None = None,
                sources: dict[str, list[str]] | None = None) -> ModuleReport:
    """Lint one module.  `protocol` modules must not carry model-checking artefacts."""
    tree = parse_module(path)
    module = tree.name
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    rep = ModuleReport(module, str(path), variables=_variables(tree))
    defs = _definitions(tree)
    if protocol:
        for i, ln in enumerate(lines, 1):
            code = ln.split("\\*", 1)[0]
            if re.search(r"\bPermutations\s*\(|\bSYMMETRY\b", code):
                rep.issues.append(LintIssue(module, i, "symmetry belongs in the MC module, not the "
                                                       "protocol module"))
    if "Next" in defs:
        all_vars = set(rep.variables) | set((extra_definitions or {}).get("__vars__", []))
        rep.actions = _next_actions(defs["Next"], all_vars, module, rep.issues)
        known = dict(extra_definitions or {})
        known.update({k: (module, v) for k, v in defs.items()})
        srcs = dict(sources or {})
        srcs[module] = lines
        for name in rep.actions:
            if name not in known:
                rep.issues.append(LintIssue(module, _line(defs["Next"]),
                                            f"action {name} is not defined in the spec modules"))
                continue
            mod, d = known[name]
            first, last = _line(d), (d.end.line + 1 if getattr(d, "end", None) else _line(d))
            window = _comment_above(srcs[mod], first) + srcs[mod][first - 1: last]
            if not any("KIP-" in ln for ln in window):
                rep.issues.append(LintIssue(mod, first, f"action {name} cites no KIP section"))
    return rep


def lint_spec_dir(spec_dir: Path, protocol_modules: list[str]) -> list[ModuleReport]:
    """Lint each protocol module (with the definitions of every module in spec_dir in scope)."""
    trees = {p.stem: (p, parse_module(p)) for p in sorted(spec_dir.glob("*.tla"))}
    known: dict = {}
    sources: dict[str, list[str]] = {}
    all_vars: list[str] = []
    for stem, (p, tree) in trees.items():
        sources[tree.name] = p.read_text(encoding="utf-8").splitlines()
        all_vars += _variables(tree)
        for k, v in _definitions(tree).items():
            known.setdefault(k, (tree.name, v))
    known["__vars__"] = all_vars
    return [lint_module(trees[m][0], protocol=True, extra_definitions=known, sources=sources)
            for m in protocol_modules if m in trees]
