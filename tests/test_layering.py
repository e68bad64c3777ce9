"""The packages' layering (issue 17), checked on the syntax tree of every module:

    kraftcheck (the CLI)  ->  refimpl, trace_checker, spark_trace_analysis, proofs,
                              kafka_bridge  ->  kraftcore

kraftcore, the foundation, imports nothing of the project but itself; the packages in the
middle import kraftcore and each other, never the CLI; kraftcheck may import everything.
Imports inside functions count, and so do importlib.import_module / __import__ with a literal
(or f-string) module name.  A violation names the file, the line and the imported module."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

# not kraftcore.paths: the check must also run (and fail) on a tree without kraftcore
REPO = Path(__file__).resolve().parent.parent

FOUNDATION = "kraftcore"
MIDDLE = ("refimpl", "trace_checker", "spark_trace_analysis", "proofs", "kafka_bridge")
TOP = "kraftcheck"
LAYER = {FOUNDATION: 0, **{p: 1 for p in MIDDLE}, TOP: 2}


def may_import(importer: str, imported: str) -> bool:
    """The dependency rule between two top-level packages."""
    if imported not in LAYER or importer == imported:
        return True
    if importer == FOUNDATION:
        return False
    return LAYER[imported] <= LAYER[importer]


def _package_of(path: Path, root: Path) -> list[str]:
    """The package a relative import in `path` starts at: its folder (`refimpl/sim/corpus.py`
    and `refimpl/sim/__init__.py` -> ["refimpl", "sim"])."""
    return list(path.relative_to(root).parent.parts)


def _literal_prefix(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)         # f"kraftcheck.commands.{name}"
    return None


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in the file at `path`, relative imports resolved."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(path, root)
                base = base[:len(base) - node.level + 1]
                out.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
            else:
                out.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in ("import_module", "__import__"):
                mod = _literal_prefix(node.args[0])
                if mod:
                    out.append((node.lineno, mod))
    return out


def violations(root: Path) -> list[str]:
    found = []
    for pkg in sorted(LAYER):
        for f in sorted((root / pkg).rglob("*.py")):
            for line, mod in imported_modules(f, root):
                target = mod.split(".")[0]
                if not may_import(pkg, target):
                    why = ("kraftcore imports nothing of the project" if pkg == FOUNDATION
                           else "only the CLI itself imports kraftcheck")
                    found.append(f"{f.relative_to(root)}:{line}: {pkg} imports {mod} ({why})")
    return found


def test_every_package_has_a_layer():
    include = tomllib.loads((REPO / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["packages"]["find"]["include"]
    assert {p.rstrip("*") for p in include} == set(LAYER), \
        f"pyproject.toml installs {sorted(include)}; the layers know {sorted(LAYER)}"
    for pkg in LAYER:
        assert (REPO / pkg / "__init__.py").is_file(), f"{pkg}/__init__.py is missing"


def test_no_package_imports_a_layer_above_it():
    found = violations(REPO)
    assert not found, f"{len(found)} imports break the layering:\n" + "\n".join(found)


def test_the_check_sees_every_kind_of_import(tmp_path):
    files = {
        "kraftcore/__init__.py": "",
        "kraftcore/tlc/__init__.py": "",
        "kraftcore/tlc/run.py": "from .. import tlc\nfrom . import run\nimport json\n",
        "kraftcore/bad.py": "import os\n\ndef f():\n    from trace_checker import corpus\n",
        "refimpl/__init__.py": "from kraftcore.tlc import run\nimport trace_checker.corpus\n",
        "refimpl/sim/__init__.py": "",
        "refimpl/sim/lazy.py": ("import importlib\n\n\ndef g(name):\n"
                                "    return importlib.import_module(f'kraftcheck.commands.{name}')\n"),
        "refimpl/sim/rel.py": "from ..sim import lazy\nx = __import__('kraftcheck.cli')\n",
        "trace_checker/__init__.py": "import kraftcheck.cli as cli\n",
        "trace_checker/corpus.py": "from refimpl.sim import lazy\n",
        "spark_trace_analysis/__init__.py": "from kraftcheck import __version__\n",
        "proofs/__init__.py": "import z3\n",
        "kraftcheck/__init__.py": "import kraftcore, refimpl, proofs\nfrom .commands import demo\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = [v.split(" (")[0] for v in violations(tmp_path)]
    assert found == [
        "kraftcore/bad.py:4: kraftcore imports trace_checker",
        "refimpl/sim/lazy.py:5: refimpl imports kraftcheck.commands.",
        "refimpl/sim/rel.py:2: refimpl imports kraftcheck.cli",
        "spark_trace_analysis/__init__.py:1: spark_trace_analysis imports kraftcheck",
        "trace_checker/__init__.py:1: trace_checker imports kraftcheck.cli",
    ]
