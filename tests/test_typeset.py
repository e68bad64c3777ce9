"""`kraftcheck spec typeset`: the HTML of every module (always) and the tla2tex PDFs (deep)."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from kraftcheck.cli import app
from kraftcore.paths import SPEC_DIR
from kraftcheck.typeset import definitions, load_modules

runner = CliRunner()


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])


def _parse(path) -> _Anchors:
    p = _Anchors()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_definitions_finds_operators_and_declarations():
    text = """---- MODULE M ----
EXTENDS Naturals
CONSTANTS
    A,      \\* first
            \\* (a comment line)
    B
VARIABLE x, y
(* Foo == 1 inside a block comment is not a definition *)
Init == x = 0 /\\ y = 0
Op(a, b) == a + b
f[n \\in Nat] == n
LOCAL Helper == 3
  NotTop == 4
====
"""
    got = [(d.name, d.line, d.kind) for d in definitions(text)]
    assert got == [("A", 4, "constant"), ("B", 6, "constant"), ("x", 7, "variable"),
                   ("y", 7, "variable"), ("Init", 9, "operator"), ("Op", 10, "operator"),
                   ("f", 11, "operator"), ("Helper", 12, "operator")]


def test_html_has_every_module_with_anchors_and_links(tmp_path):
    r = runner.invoke(app, ["spec", "typeset", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    names = sorted(p.stem for p in SPEC_DIR.glob("*.tla"))
    assert doc["modules"] == names and doc["pdf"] == []
    mods = {m.name: m for m in load_modules(SPEC_DIR)}
    pages = {f"{n}.html": _parse(tmp_path / f"{n}.html") for n in names}  # each page parsed once
    for name in names:
        page = pages[f"{name}.html"]
        # An anchor per definition and per line, the module text complete.
        assert {d.name for d in mods[name].definitions} <= page.ids
        n_lines = len(mods[name].text.splitlines())
        assert {f"L{i}" for i in range(1, n_lines + 1)} <= page.ids
        # Every link within the typeset spec resolves to an existing page and anchor.
        for href in page.hrefs:
            target, _, frag = href.partition("#")
            target_page = (pages.get(target) or _parse(tmp_path / target)) if target else page
            if frag:
                assert frag in target_page.ids, (name, href)
    kraft = (tmp_path / "KRaft.html").read_text()
    # Names defined in an EXTENDed module link to it; KRaft's own variables are anchored.
    assert 'href="KRaftLog.html#IsUpToDate"' in kraft
    assert '<dfn id="currentEpoch">' in kraft and '<dfn id="Next">' in kraft
    assert '<span class="k">EXTENDS</span>' in kraft
    index = _parse(tmp_path / "index.html")
    assert {f"{n}.html" for n in names} <= set(index.hrefs)
    assert not any(h.endswith(".pdf") for h in index.hrefs)  # no PDF made, none linked


def test_pdf_without_latex_exits_2_with_the_fix(tmp_path, monkeypatch):
    """Where pdflatex is missing, --pdf says how to install it and fails (never a silent pass)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = shutil.which("java")
    if java:
        (bin_dir / "java").symlink_to(java)
    monkeypatch.setenv("PATH", str(bin_dir))
    r = runner.invoke(app, ["spec", "typeset", "--pdf", "--out", str(tmp_path / "out")])
    assert r.exit_code == 2
    assert "pdflatex not found" in r.output and "make spec-pdf" in r.output
    assert not (tmp_path / "out").exists()


@pytest.mark.deep
@pytest.mark.tlc
def test_pdf_typesets_every_module(tmp_path):
    """Needs pdflatex (scripts/setup-latex.sh, run by `make spec-pdf`); fails without it."""
    assert shutil.which("pdflatex"), "pdflatex missing: run scripts/setup-latex.sh"
    r = runner.invoke(app, ["spec", "typeset", "--pdf", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    names = sorted(p.stem for p in SPEC_DIR.glob("*.tla"))
    assert [p["path"] for p in doc["pdf"]] == [str(tmp_path / f"{n}.pdf") for n in names]
    for p in doc["pdf"]:
        data = open(p["path"], "rb").read()
        assert data.startswith(b"%PDF") and p["pages"] >= 1
    big = {p["path"].rsplit("/", 1)[1]: p["pages"] for p in doc["pdf"]}
    assert big["KRaft.pdf"] > 5  # the protocol module is long; a truncated run would show
    assert re.search(r'href="KRaft\.pdf"', (tmp_path / "index.html").read_text())
