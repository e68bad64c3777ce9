"""Typesetting the TLA+ modules for design review: PDF with tla2tex, HTML for browsers.

- PDF: tla2tex (in the bundled tla2tools.jar, `java -cp JAR tla2tex.TLA`) turns each module
  into LaTeX and runs pdflatex on it.  pdflatex is not part of the default setup: `make spec-pdf`
  installs it (scripts/setup-latex.sh); without it `typeset_pdf` raises LatexMissing, which the
  CLI reports with exit status 2.
- HTML: one page per module with the module text as written (comments, keywords and strings
  marked), line numbers with anchors (Mod.html#L12), an anchor per definition, declared
  constant and variable (Mod.html#Name) and every use of a name defined in a project module
  linked to its definition, also across EXTENDS; an index.html lists the modules and their
  definitions, and links the PDFs when they were made.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kraftcore.output import write_atomic

# TLA+ reserved words and the standard-module operators that read as keywords.
KEYWORDS = frozenset("""
ASSUME ASSUMPTION AXIOM BOOLEAN CASE CHOOSE CONSTANT CONSTANTS DOMAIN ELSE ENABLED EXCEPT
EXTENDS FALSE IF IN INSTANCE LET LOCAL MODULE OTHER SF_ SUBSET THEN THEOREM TRUE UNCHANGED
UNION VARIABLE VARIABLES WF_ WITH LAMBDA RECURSIVE
""".split())

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A definition starts in column 0: `Name ==`, `Name(a, b) ==`, `Name[x \in S] ==`, `LOCAL Name ==`.
_DEF = re.compile(r"^(?:LOCAL\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^=]*\)|\[[^=]*\])?\s*==")
_DECL = re.compile(r"^(VARIABLES?|CONSTANTS?)\b(.*)$")
_MODULE = re.compile(r"^-{4,}\s*MODULE\s+([A-Za-z_][A-Za-z0-9_]*)\s*-{4,}")
_EXTENDS = re.compile(r"^EXTENDS\s+(.*)$", re.M)


class TypesetError(RuntimeError):
    """tla2tex or LaTeX failed on a module; the message names the module and LaTeX's error."""


class LatexMissing(TypesetError):
    """pdflatex is not installed; the message says how to install it."""


LATEX_HINT = ("pdflatex not found on PATH: typesetting the spec as PDF needs LaTeX. "
              "Run `make spec-pdf` (it installs texlive-latex-base with scripts/setup-latex.sh) "
              "or `apt-get install texlive-latex-base`; the HTML needs nothing more "
              "(`kraftcheck spec typeset` without --pdf).")


@dataclass(frozen=True)
class Definition:
    """A name a module defines or declares, with the 1-based line it is introduced on."""
    name: str
    line: int
    kind: str   # operator | constant | variable


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    text: str
    extends: tuple[str, ...]
    definitions: tuple[Definition, ...]

    @property
    def defined(self) -> dict[str, Definition]:
        return {d.name: d for d in self.definitions}


def _strip_comments(line: str) -> str:
    line = re.sub(r"\(\*.*?\*\)", " ", line)
    line = re.sub(r"\(\*.*$", " ", line)
    return line.split("\\*", 1)[0]


def definitions(text: str) -> list[Definition]:
    """The top-level operator definitions and the CONSTANT/VARIABLE declarations of a module.

    Definitions are recognised in column 0 (the layout of every module in spec/); a declaration
    runs from its keyword over the following indented lines."""
    out: list[Definition] = []
    lines = text.splitlines()
    in_block = 0
    decl_kind: str | None = None
    for i, raw in enumerate(lines, start=1):
        # Skip the inside of multi-line block comments (nested, as in TLA+).
        if in_block:
            in_block += raw.count("(*") - raw.count("*)")
            continue
        opened = raw.count("(*") - raw.count("*)")
        if opened > 0:
            in_block = opened
        code = _strip_comments(raw)
        if decl_kind and code[:1].isspace() or (decl_kind and not code.strip()):
            for name in _IDENT.findall(code):
                out.append(Definition(name, i, decl_kind))
            continue
        decl_kind = None
        m = _DECL.match(code)
        if m:
            decl_kind = "variable" if m.group(1).startswith("VARIABLE") else "constant"
            for name in _IDENT.findall(m.group(2)):
                out.append(Definition(name, i, decl_kind))
            continue
        m = _DEF.match(code)
        if m and m.group(1) not in KEYWORDS:
            out.append(Definition(m.group(1), i, "operator"))
    seen: set[str] = set()
    unique = []
    for d in out:
        if d.name not in seen:
            seen.add(d.name)
            unique.append(d)
    return unique


def load_module(path: Path) -> Module:
    text = path.read_text(encoding="utf-8")
    m = _MODULE.search(text)
    if not m:
        raise TypesetError(f"{path}: no `---- MODULE Name ----` header")
    if m.group(1) != path.stem:
        raise TypesetError(f"{path}: the module is named {m.group(1)}, not {path.stem}")
    ext = _EXTENDS.search(text)
    extends = tuple(x.strip() for x in _strip_comments(ext.group(1)).split(",") if x.strip()) \
        if ext else ()
    return Module(path.stem, path, text, extends, tuple(definitions(text)))


def load_modules(spec_dir: Path) -> list[Module]:
    paths = sorted(spec_dir.glob("*.tla"))
    if not paths:
        raise TypesetError(f"no .tla modules in {spec_dir}")
    return [load_module(p) for p in paths]


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<bopen>\(\*)
  | (?P<line>\\\*[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<other>[^\sA-Za-z_"(\\]+|\s+|.)
""", re.X | re.S)


def _scope(mod: Module, mods: dict[str, Module]) -> dict[str, str]:
    """name -> the module (page) that defines it: the module itself first, then what it
    EXTENDS (transitively), as TLA+ resolves names."""
    scope: dict[str, str] = {}
    todo, seen = [mod.name], set()
    while todo:
        name = todo.pop(0)
        if name in seen or name not in mods:
            continue
        seen.add(name)
        for d in mods[name].definitions:
            scope.setdefault(d.name, name)
        todo.extend(mods[name].extends)
    return scope


def highlight(mod: Module, mods: dict[str, Module]) -> list[str]:
    """The module's lines as HTML: comments, keywords and strings in spans, each definition
    site an anchor, each use of a project definition a link."""
    scope = _scope(mod, mods)
    defined = mod.defined
    out_lines: list[str] = []
    depth = 0  # block-comment nesting carried across lines
    for lineno, line in enumerate(mod.text.splitlines(), start=1):
        parts: list[str] = []
        anchored: set[str] = set()
        pos = 0
        if depth:
            parts.append('<span class="c">')
        while pos < len(line):
            if depth:
                nxt_open = line.find("(*", pos)
                nxt_close = line.find("*)", pos)
                if nxt_close == -1 and nxt_open == -1:
                    parts.append(html.escape(line[pos:]))
                    break
                if nxt_open != -1 and (nxt_close == -1 or nxt_open < nxt_close):
                    parts.append(html.escape(line[pos:nxt_open + 2]))
                    depth += 1
                    pos = nxt_open + 2
                else:
                    parts.append(html.escape(line[pos:nxt_close + 2]))
                    depth -= 1
                    pos = nxt_close + 2
                    if not depth:
                        parts.append("</span>")
                continue
            m = _TOKEN.match(line, pos)
            kind, text = m.lastgroup, m.group()
            pos = m.end()
            if kind == "bopen":
                depth = 1
                parts.append('<span class="c">' + html.escape(text))
            elif kind == "line":
                parts.append(f'<span class="c">{html.escape(text)}</span>')
            elif kind == "string":
                parts.append(f'<span class="s">{html.escape(text)}</span>')
            elif kind == "ident":
                if text in KEYWORDS:
                    parts.append(f'<span class="k">{text}</span>')
                elif text in defined and defined[text].line == lineno and text not in anchored:
                    anchored.add(text)
                    parts.append(f'<dfn id="{text}">{text}</dfn>')
                elif text in scope:
                    page = "" if scope[text] == mod.name else f"{scope[text]}.html"
                    parts.append(f'<a href="{page}#{text}">{text}</a>')
                elif text in mods and text != mod.name:
                    parts.append(f'<a href="{text}.html">{text}</a>')
                else:
                    parts.append(text)
            else:
                parts.append(html.escape(text))
        if depth:
            parts.append("</span>")
        out_lines.append("".join(parts))
    return out_lines


_CSS = """
body { font-family: system-ui, sans-serif; margin: 0; display: flex; color: #1d1d1d; }
nav { width: 17rem; flex: none; height: 100vh; overflow-y: auto; position: sticky; top: 0;
      padding: .8rem; box-sizing: border-box; border-right: 1px solid #ddd; background: #fafafa;
      font-size: .85rem; }
nav ul { list-style: none; padding-left: .3rem; margin: .2rem 0 .8rem; }
nav small { color: #777; }
main { padding: .8rem 1.2rem; overflow-x: auto; flex: 1; }
pre { font: .85rem/1.35 ui-monospace, "DejaVu Sans Mono", monospace; margin: 0; }
.ln { display: inline-block; width: 3.2em; color: #999; text-align: right; margin-right: 1em;
      user-select: none; text-decoration: none; }
.c { color: #4e7a27; } .k { color: #7a1fa2; font-weight: 600; } .s { color: #b0451b; }
dfn { font-style: normal; font-weight: 700; background: #fff4c2; }
a { color: #0b57a8; text-decoration: none; } a:hover { text-decoration: underline; }
:target { background: #ffe27a; }
table { border-collapse: collapse; } td, th { padding: .2rem .6rem; border-bottom: 1px solid #eee;
      text-align: left; vertical-align: top; }
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{title}</title><style>{css}</style></head>
<body><nav>{nav}</nav><main>{main}</main></body></html>
"""


def _nav(mods: list[Module], current: Module | None, pdfs: set[str]) -> str:
    parts = ['<p><a href="index.html"><b>kraftcheck spec</b></a></p><ul>']
    for m in mods:
        pdf = f' <small><a href="{m.name}.pdf">pdf</a></small>' if m.name in pdfs else ""
        label = f"<b>{m.name}</b>" if current is m else m.name
        parts.append(f'<li><a href="{m.name}.html">{label}</a>{pdf}</li>')
    parts.append("</ul>")
    if current is not None:
        parts.append(f"<p><b>Definitions of {current.name}</b></p><ul>")
        for d in current.definitions:
            parts.append(f'<li><a href="#{d.name}">{d.name}</a> <small>{d.kind}, '
                         f'line {d.line}</small></li>')
        parts.append("</ul>")
    return "".join(parts)


def module_page(mod: Module, mods: list[Module], pdfs: set[str]) -> str:
    by_name = {m.name: m for m in mods}
    lines = highlight(mod, by_name)
    body = "\n".join(f'<a class="ln" id="L{i}" href="#L{i}">{i}</a>{ln}'
                     for i, ln in enumerate(lines, start=1))
    pdf = f' (<a href="{mod.name}.pdf">PDF, typeset by tla2tex</a>)' if mod.name in pdfs else ""
    main = (f"<h1>{mod.name}.tla</h1><p>spec/{mod.name}.tla{pdf}; extends "
            + (", ".join(f'<a href="{e}.html">{e}</a>' if e in by_name else e
                         for e in mod.extends) or "nothing")
            + f"</p><pre>{body}</pre>")
    return _PAGE.format(title=f"{mod.name}.tla", css=_CSS, nav=_nav(mods, mod, pdfs), main=main)


def index_page(mods: list[Module], pdfs: set[str]) -> str:
    rows = []
    for m in mods:
        ops = sum(d.kind == "operator" for d in m.definitions)
        pdf = f'<a href="{m.name}.pdf">{m.name}.pdf</a>' if m.name in pdfs else "—"
        rows.append(f'<tr><td><a href="{m.name}.html">{m.name}</a></td>'
                    f'<td>{", ".join(m.extends) or "—"}</td><td>{ops}</td>'
                    f"<td>{len(m.text.splitlines())}</td><td>{pdf}</td></tr>")
    main = ("<h1>The TLA+ specification</h1>"
            "<p>Every module of spec/, as written; names link to their definitions. "
            "Reading guides: docs/spec-kraft.md (KIP-595) and docs/spec-elr.md (KIP-966).</p>"
            "<table><tr><th>module</th><th>extends</th><th>definitions</th><th>lines</th>"
            "<th>typeset PDF</th></tr>" + "".join(rows) + "</table>")
    return _PAGE.format(title="kraftcheck spec", css=_CSS, nav=_nav(mods, None, pdfs), main=main)


def render_html(mods: list[Module], out_dir: Path, pdfs: set[str] = frozenset()) -> list[Path]:
    """Write index.html and NAME.html per module into out_dir; returns the files written."""
    written = []
    for m in mods:
        p = out_dir / f"{m.name}.html"
        write_atomic(p, module_page(m, mods, set(pdfs)))
        written.append(p)
    p = out_dir / "index.html"
    write_atomic(p, index_page(mods, set(pdfs)))
    written.append(p)
    return written


# ---------------------------------------------------------------------------------------------
# PDF (tla2tex + pdflatex)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TypesetPdf:
    path: Path
    pages: int


def latex_command() -> str:
    exe = shutil.which("pdflatex")
    if exe is None:
        raise LatexMissing(LATEX_HINT)
    return exe


def typeset_pdf(mod: Module, out_dir: Path, java: str, jar: Path, *,
                timeout: float = 600) -> "TypesetPdf":
    """Typeset one module with tla2tex and pdflatex into out_dir/NAME.pdf (written atomically).

    tla2tex runs in a scratch folder with a copy of the module, so its .tex/.aux/.log files never
    land next to the sources."""
    latex = latex_command()
    with tempfile.TemporaryDirectory(prefix=f"tla2tex-{mod.name}-") as tmp:
        src = Path(tmp) / mod.path.name
        shutil.copyfile(mod.path, src)
        cmd = [java, "-cp", str(jar), "tla2tex.TLA", "-shade", "-number", "-nops",
               "-latexCommand", latex, "-latexOutputExt", "pdf", src.name]
        try:
            r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise TypesetError(f"{mod.path}: tla2tex did not finish within {timeout:.0f}s") from None
        pdf = Path(tmp) / f"{mod.name}.pdf"
        if r.returncode != 0 or not pdf.is_file() or not pdf.read_bytes().startswith(b"%PDF"):
            log = Path(tmp) / f"{mod.name}.log"
            errors = [ln for ln in (log.read_text(errors="replace").splitlines()
                                    if log.is_file() else []) if ln.startswith("!")]
            tail = "\n".join(errors[:5] or (r.stdout + r.stderr).strip().splitlines()[-8:])
            raise TypesetError(f"{mod.path}: tla2tex/pdflatex failed (exit {r.returncode}):\n"
                               f"{tail}")
        log = (Path(tmp) / f"{mod.name}.log").read_text(errors="replace")
        m = re.search(r"Output written on .*?\((\d+) pages?", log.replace("\n", ""))
        if not m or int(m.group(1)) < 1:
            raise TypesetError(f"{mod.path}: pdflatex wrote no pages")
        target = out_dir / pdf.name
        write_atomic(target, pdf.read_bytes())
        return TypesetPdf(target, int(m.group(1)))
