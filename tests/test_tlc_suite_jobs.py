"""`kraftcheck tlc suite --jobs N`: several TLC runs at once, results in the manifest's order.

TLC itself is replaced by a fake `run_config`, so these tests check the scheduling only: the
configs start largest pinned state count first, at most N run at once, and each gets one TLC
worker unless the user chose."""

from __future__ import annotations

import threading
import time

import pytest

from kraftcheck.commands import tlc as tlc_cmd
from kraftcore.tlc.manifest import ConfigEntry


def _entries(counts):
    return [ConfigEntry(name=f"c{k}", module="MCKRaft", cfg=f"tlc_configs/c{k}.cfg", profile="ci",
                        expect="ok", description="", kip="KIP-595", manifest="kraft.toml",
                        distinct_states=n) for k, n in enumerate(counts)]


class _FakeTLC:
    def __init__(self):
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0
        self.started: list[str] = []
        self.workers: list[int | None] = []

    def __call__(self, entry, *, workers=None, timeout=None, progress=None, cache=False):
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.started.append(entry.name)
            self.workers.append(workers)
        time.sleep(0.05)
        with self.lock:
            self.running -= 1
        return ("result", entry.name)


@pytest.fixture
def fake(monkeypatch):
    f = _FakeTLC()
    monkeypatch.setattr(tlc_cmd, "run_config", f)
    return f


def test_jobs_run_at_once_in_manifest_order_largest_first(fake):
    entries = _entries([10, 5000, None, 300, 70000])
    results = tlc_cmd.run_entries(entries, show_progress=False, jobs=2)
    assert results == [("result", e.name) for e in entries]
    assert fake.peak == 2
    assert fake.started[:2] == ["c4", "c1"]          # the largest pinned counts start first
    assert fake.started[-1] == "c2"                   # no pinned count: last
    assert fake.workers == [1] * 5                    # one TLC worker each


def test_one_job_runs_in_turn_with_the_manifests_workers(fake):
    entries = _entries([10, 5000, 300])
    tlc_cmd.run_entries(entries, show_progress=False)
    assert fake.peak == 1
    assert fake.started == ["c0", "c1", "c2"]
    assert fake.workers == [None] * 3                 # run_config takes the manifest's


def test_users_workers_kept_with_jobs(fake):
    tlc_cmd.run_entries(_entries([1, 2]), show_progress=False, jobs=2, workers=2)
    assert fake.workers == [2, 2]


def test_jobs_below_one_refused():
    with pytest.raises(ValueError, match="at least 1"):
        tlc_cmd.run_entries(_entries([1]), show_progress=False, jobs=0)


def test_the_default_is_two_runs_at_once_on_two_cores_or_more(monkeypatch):
    for cpus, expected in ((None, 1), (1, 1), (2, 2), (16, 2)):
        monkeypatch.setattr(tlc_cmd.os, "cpu_count", lambda c=cpus: c)
        assert tlc_cmd.default_jobs() == expected


def test_kraftcheck_tlc_workers_sets_the_workers_of_runs_that_do_not_ask(monkeypatch, tmp_path):
    from kraftcore.tlc import runner
    monkeypatch.setenv("KRAFTCHECK_TLC_WORKERS", "3")
    assert runner.workers_from_env() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("KRAFTCHECK_TLC_WORKERS", bad)
        with pytest.raises(ValueError, match="KRAFTCHECK_TLC_WORKERS"):
            runner.workers_from_env()
    monkeypatch.delenv("KRAFTCHECK_TLC_WORKERS")
    assert runner.workers_from_env() is None
