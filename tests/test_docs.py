"""The reading guides stay true: every state count and depth quoted in docs/spec-*.md equals
the count the manifest pins (so a spec change that moves a count fails here until the guide is
updated), every config a guide names exists, and no guide or the README carries a path of one
machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tlc.manifest import load_manifest

DOCS = REPO_ROOT / "docs"
SPEC_DOCS = {"spec-kraft.md": "kraft-", "spec-elr.md": "elr-"}


def _int(cell: str) -> int | None:
    cell = cell.strip()
    return int(cell.replace(",", "")) if re.fullmatch(r"\d{1,3}(,\d{3})*|\d+", cell) else None


def config_rows(path: Path) -> list[dict]:
    """The rows of the guide's config tables (a header starting `| config |`): name, the
    `distinct states` cell, the `depth` cell, and the line number."""
    rows, header = [], None
    for no, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if ln.startswith("| config |"):
            header = [c.strip() for c in ln.strip().strip("|").split("|")]
            continue
        if header and ln.startswith("| `"):
            cells = [c.strip() for c in ln.strip().strip("|").split("|")]
            row = dict(zip(header, cells))
            depth_col = next((h for h in header if h.startswith("depth")), None)
            rows.append({"name": cells[0].strip("`"), "line": no,
                         "states": row.get("distinct states", ""),
                         "depth": row.get(depth_col, "") if depth_col else ""})
        elif not ln.startswith("|"):
            header = None
    return rows


@pytest.fixture(scope="module")
def manifest():
    return {e.name: e for e in load_manifest()}


@pytest.mark.parametrize("doc", sorted(SPEC_DOCS))
def test_quoted_state_counts_equal_the_pinned_counts(doc, manifest):
    path = DOCS / doc
    rows = config_rows(path)
    assert rows, f"{doc}: no config table found"
    wrong = []
    for r in rows:
        e = manifest.get(r["name"])
        if e is None:
            wrong.append(f"{doc}:{r['line']}: {r['name']} is not a config of the manifests")
            continue
        if e.distinct_states is None:
            continue
        if _int(r["states"]) != e.distinct_states:
            wrong.append(f"{doc}:{r['line']}: {r['name']} quotes {r['states']!r} distinct states; "
                         f"the manifest pins {e.distinct_states:,}")
        if e.depth is not None and _int(r["depth"]) != e.depth:
            wrong.append(f"{doc}:{r['line']}: {r['name']} quotes depth {r['depth']!r}; the "
                         f"manifest pins {e.depth}")
    pinned = {n for n, e in manifest.items()
              if n.startswith(SPEC_DOCS[doc]) and e.distinct_states is not None}
    missing = pinned - {r["name"] for r in rows}
    wrong += [f"{doc}: the pinned config {n} is missing from the tables" for n in sorted(missing)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("doc", sorted(SPEC_DOCS))
def test_ci_profile_total(doc, manifest):
    text = (DOCS / doc).read_text(encoding="utf-8")
    m = re.search(r"\*\*CI profile total:\*\* (\d+) configs, ([\d,]+) distinct states", text)
    assert m, f"{doc}: no CI profile total line"
    ci = [e for n, e in manifest.items() if n.startswith(SPEC_DOCS[doc]) and e.profile == "ci"]
    assert int(m.group(1)) == len(ci), f"{doc}: the total names {m.group(1)} ci configs"
    # simulation and witness (expected-violation) configs pin no count
    pinned = sum(e.distinct_states for e in ci if e.distinct_states is not None)
    assert _int(m.group(2)) == pinned, \
        f"{doc}: the ci total is {m.group(2)}, the manifest's pins sum to {pinned:,}"


def test_the_checker_reads_tables_as_written(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("| config | profile | distinct states | depth |\n| --- | --- | ---: | ---: |\n"
                   "| `kraft-ci-3voters` | ci | 1,234 | 5 |\n\nprose\n")
    assert config_rows(doc) == [{"name": "kraft-ci-3voters", "line": 3, "states": "1,234",
                                 "depth": "5"}]
    assert _int("1,019,327") == 1019327 and _int("several million") is None


def test_no_machine_paths_in_the_guides():
    paths = [REPO_ROOT / "README.md"] + sorted(DOCS.glob("*.md"))
    bad = []
    for p in paths:
        for no, ln in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"(?<![\w.])/(work|home|root|tmp|Users|opt)/", ln):
                bad.append(f"{p.relative_to(REPO_ROOT)}:{no}: {ln.strip()}")
    assert not bad, "machine paths in the guides:\n" + "\n".join(bad)


def test_images_the_guides_show_exist():
    missing = []
    for p in sorted(DOCS.glob("*.md")):
        for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", p.read_text(encoding="utf-8")):
            if not (p.parent / target).is_file():
                missing.append(f"{p.name}: {target}")
    assert not missing, missing
