"""Shared fixtures: TLC availability and the repository root."""

from __future__ import annotations

import os

import pytest

from kraftcore.tlc.java import ToolchainError, toolchain

# Hypothesis: deterministic, CI-friendly defaults (no deadline: the machine is shared).
from hypothesis import settings

settings.register_profile("ci", deadline=None, max_examples=200, derandomize=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def tlc_toolchain():
    try:
        return toolchain()
    except ToolchainError as e:  # pragma: no cover - CI installs Java via `make test`
        pytest.fail(f"TLC toolchain unusable: {e}")


def pytest_addoption(parser):
    parser.addoption("--rewrite", action="store_true", default=False,
                     help="tests/test_transcripts.py: write the actual outputs into the "
                          "transcripts instead of comparing")
