"""The TLC result cache (kraftcore/tlc/cache.py): an identical run's output is reused, parsed
and judged again; any change of the modules, the config or the options runs TLC again."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from kraftcore.paths import REPO_ROOT
from kraftcore.tlc import cache as result_cache
from kraftcore.tlc.manifest import load_manifest
from kraftcore.tlc.runner import run_config

pytestmark = [pytest.mark.tlc]
FIXTURES = {e.name: e for e in load_manifest(REPO_ROOT / "tests/fixtures/tlc")}


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.setenv("KRAFTCHECK_WORK", str(tmp_path / "work"))
    monkeypatch.delenv("KRAFTCHECK_TLC_CACHE", raising=False)
    return tmp_path


def _own_copy(tmp_path, name):
    """The fixture config with its module and cfg copied under tmp_path (so they can change)."""
    e = FIXTURES[name]
    d = tmp_path / "model"
    d.mkdir(exist_ok=True)
    shutil.copy2(e.module_path, d / e.module_path.name)
    shutil.copy2(e.cfg_path, d / e.cfg_path.name)
    return dataclasses.replace(e, module=str(d / e.module_path.name), cfg=str(d / e.cfg_path.name))


def test_an_identical_run_is_reused_and_judged_again(work, tlc_toolchain):
    e = _own_copy(work, "counter-ok")
    first = run_config(e, workers=1, cache=True)
    assert first.cached_from is None and (first.status, first.distinct_states, first.depth) == (
        "ok", 25, 9)
    again = run_config(e, workers=1, cache=True)
    assert again.cached_from is not None and again.cached_from["seconds"] > 0
    assert (again.status, again.distinct_states, again.depth, again.as_expected,
            again.tlc_version) == ("ok", 25, 9, True, first.tlc_version)
    assert again.to_json()["cached_from"] == again.cached_from
    # judged against today's entry: a changed pin is not hidden by the cache
    wrong = run_config(dataclasses.replace(e, distinct_states=26), workers=1, cache=True)
    assert wrong.cached_from is not None and not wrong.as_expected
    assert wrong.mismatches == ["distinct states 25 != expected 26"]
    # without cache=True (`kraftcheck tlc run`) TLC runs
    assert run_config(e, workers=1).cached_from is None


def test_a_counterexample_comes_back_the_same(work, tlc_toolchain):
    e = _own_copy(work, "counter-inv")
    first = run_config(e, workers=1, cache=True)
    again = run_config(e, workers=1, cache=True)
    assert again.cached_from is not None and again.violated == first.violated == "BelowLimit"
    assert [s.to_json() for s in again.counterexample] == [s.to_json() for s in first.counterexample]


def test_any_change_runs_tlc_again(work, tlc_toolchain):
    e = _own_copy(work, "counter-ok")
    run_config(e, workers=1, cache=True)
    assert run_config(e, workers=2, cache=True).cached_from is None          # an option
    cfg = e.cfg_path
    cfg.write_text(cfg.read_text() + "\n\\* a comment\n")
    assert run_config(e, workers=1, cache=True).cached_from is None          # the config
    module = e.module_path
    module.write_text(module.read_text().replace("====", "\\* changed\n===="))
    assert run_config(e, workers=1, cache=True).cached_from is None          # a module
    assert run_config(e, workers=1, cache=True).cached_from is not None


def test_no_verdict_is_never_stored_and_the_switch_turns_it_off(work, tlc_toolchain,
                                                                 monkeypatch):
    e = _own_copy(work, "counter-ok")
    assert run_config(e, workers=1, timeout=0.01, cache=True).status == "timeout"
    assert not list(result_cache.cache_dir().glob("*.json.gz"))
    broken = run_config(FIXTURES["broken"], workers=1, cache=True)
    assert broken.status == "error" and not list(result_cache.cache_dir().glob("*.json.gz"))
    monkeypatch.setenv("KRAFTCHECK_TLC_CACHE", "0")
    run_config(e, workers=1, cache=True)
    assert not list(result_cache.cache_dir().glob("*.json.gz"))
    monkeypatch.delenv("KRAFTCHECK_TLC_CACHE")
    run_config(e, workers=1, cache=True)
    assert len(list(result_cache.cache_dir().glob("*.json.gz"))) == 1
    # an unreadable entry is run again (and replaced)
    (entry,) = result_cache.cache_dir().glob("*.json.gz")
    entry.write_bytes(b"not gzip")
    assert run_config(e, workers=1, cache=True).cached_from is None
    assert run_config(e, workers=1, cache=True).cached_from is not None


def test_a_suite_starts_the_longest_last_run_first(work, monkeypatch):
    """Two at a time, the configs start by the seconds of their last run, else by their pinned
    count: a slow liveness config of few states does not start last (TLC replaced by a fake)."""
    import kraftcheck.commands.tlc as tlc_cmd
    from kraftcore.tlc.manifest import ConfigEntry
    entries = [ConfigEntry(name=f"c{k}", module="MCKRaft", cfg=f"c{k}.cfg", profile="ci",
                           expect="ok", description="", kip="KIP-595", manifest="kraft.toml",
                           distinct_states=n) for k, n in enumerate([700_000, 5_000, 70_000])]
    started = []

    def fake(entry, **_):
        started.append(entry.name)
        return entry.name

    monkeypatch.setattr(tlc_cmd, "run_config", fake)
    tlc_cmd.run_entries(entries, show_progress=False, jobs=2)
    assert started[0] == "c0"                          # no record: largest count first
    result_cache.record_seconds({"c1": 300.0, "c2": 1.0})
    assert result_cache.last_seconds() == {"c1": 300.0, "c2": 1.0}
    started.clear()
    tlc_cmd.run_entries(entries, show_progress=False, jobs=2)
    assert started[0] == "c1" and started[-1] == "c2"   # c0 at 700,000 / 7,000 = 100 s


def test_two_processes_asking_for_the_same_run_at_once_run_tlc_once(work, tlc_toolchain):
    """kraftcore/locks.py: the second asker waits for the first run and takes its result (two
    test workers needing one config, `kraftcheck tlc suite` beside the tests)."""
    import concurrent.futures
    e = _own_copy(work, "counter-ok")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: run_config(e, workers=1, cache=True), range(2)))
    assert sorted(r.cached_from is None for r in runs) == [False, True]
    assert [(r.status, r.distinct_states) for r in runs] == [("ok", 25)] * 2


def test_the_jit_follows_the_runs_size():
    """C1 only for small runs (kraftcore/tlc/manifest.py SMALL_RUN_STATES), C2 otherwise, and
    the manifest's `jit` overrides."""
    from kraftcore.tlc.manifest import SMALL_RUN_STATES, load_manifest as manifest
    by = {e.name: e for e in manifest()}
    assert by["kraft-graph-small"].default_jit == "c1"           # 34,057 states
    assert by["kraft-ci-restart"].default_jit == "c2"            # 353,503
    assert by["kraft-bug-vote-not-persisted"].default_jit == "c1"
    assert by["kraft-bug-no-current-epoch-rule"].default_jit == "c2"   # jit = "c2"
    assert all(e.default_jit == "c2" for e in by.values()
               if e.distinct_states is not None and e.distinct_states >= SMALL_RUN_STATES)


def test_every_liveness_config_keeps_c2():
    """Liveness checking is slower with C1 only (kraft-ci-liveness-backoff-resign: 108 CPU-s
    against 68), whatever the state count."""
    from kraftcore.tlc.manifest import load_manifest as manifest
    assert [e.name for e in manifest() if "liveness" in e.name and e.default_jit != "c2"] == []
