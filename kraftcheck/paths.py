"""Where things live: the repository root, the spec and config folders, the work folder."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SPEC_DIR = REPO_ROOT / "spec"
CONFIG_DIR = REPO_ROOT / "tlc_configs"


def work_dir() -> Path:
    """Scratch space for TLC (states/, copied modules) and caches; never inside the sources.

    KRAFTCHECK_WORK overrides it; the default is .kraftcheck-work/ at the repository root, which
    is git-ignored.
    """
    p = Path(os.environ.get("KRAFTCHECK_WORK", REPO_ROOT / ".kraftcheck-work"))
    p.mkdir(parents=True, exist_ok=True)
    return p
