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
    # absolute: TLC runs in a folder of its own, where a relative path would point elsewhere
    p = Path(os.environ.get("KRAFTCHECK_WORK") or REPO_ROOT / ".kraftcheck-work").expanduser()
    p = p.absolute()
    p.mkdir(parents=True, exist_ok=True)
    return p
