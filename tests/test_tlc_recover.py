"""Stopped TLC runs: where they stopped, the checkpoint kept, and resuming from it
(`kraftcheck tlc run --recover`), which never confirms a pinned count (README, "Resuming a long
run": TLC 2.15 explores states again after a recovery)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftcore.paths import REPO_ROOT, work_dir
from kraftcore.tlc.manifest import find_entry, load_manifest
from kraftcore.tlc.runner import (MODEL_DIGEST, RecoverError, TLCResult, find_checkpoint,
                                  judge_recovered, run_config)
from kraftcore.tlc.tool_output import TLCOutcome

FIXTURES = {e.name: e for e in load_manifest(REPO_ROOT / "tests/fixtures/tlc")}


def _fake_checkpoint(root: Path, name: str, digest: str = "0" * 64) -> Path:
    chk = root / "meta" / "26-11-24-13-37-28"
    chk.mkdir(parents=True)
    (chk / "MCKRaft-0.chkpt").write_bytes(b"\0" * 16)
    (root / MODEL_DIGEST).write_text(f"{digest} {name}\n", encoding="utf-8")
    return chk


def test_find_checkpoint_needs_chkpt_files(tmp_path):
    assert find_checkpoint(tmp_path / "meta") is None
    (tmp_path / "meta" / "26-11-24-00-00-00").mkdir(parents=True)
    assert find_checkpoint(tmp_path / "meta") is None     # TLC started, never checkpointed
    chk = tmp_path / "meta" / "26-11-24-00-00-00"
    (chk / "queue.chkpt").write_bytes(b"x")
    assert find_checkpoint(tmp_path / "meta") == chk


def test_a_recovered_run_never_confirms_a_pin():
    entry = FIXTURES["counter-ok"]
    pinned = type(entry)(**{**entry.__dict__, "distinct_states": 25, "depth": 9})
    out = TLCOutcome(distinct_states=25, depth=9)
    ok, why = judge_recovered(pinned, out, "ok", True, [])
    assert not ok and "not checked" in why[0] and "no violation" in why[0]
    unpinned = type(entry)(**{**entry.__dict__, "distinct_states": None, "depth": None})
    assert judge_recovered(unpinned, out, "ok", True, []) == (True, [])
    # a violation found after a recovery is judged as any other
    assert judge_recovered(pinned, out, "violation", False, ["x"]) == (False, ["x"])


def test_result_json_carries_the_stop_fields():
    r = TLCResult(name="n", spec="s", cfg="c", profile="deep", mode="bfs", status="timeout",
                  violated=None, expected="ok", as_expected=False, distinct_states=None,
                  generated_states=None, depth=None, seconds=1.0,
                  progress_at_stop={"generated": 3, "distinct": 2, "queue": 1, "depth": 4},
                  checkpoint="/x/meta/t")
    d = r.to_json()
    assert d["progress_at_stop"]["depth"] == 4 and d["checkpoint"] == "/x/meta/t"
    assert d["recovered_from"] is None


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
class TestRecoverRefusals:
    def test_not_a_checkpoint(self, tlc_toolchain, tmp_path):
        with pytest.raises(RecoverError, match="not a TLC checkpoint"):
            run_config(FIXTURES["counter-ok"], workers=1, recover=tmp_path)

    def test_a_checkpoint_not_kept_by_kraftcheck(self, tlc_toolchain, tmp_path):
        chk = _fake_checkpoint(tmp_path, "counter-ok")
        (tmp_path / MODEL_DIGEST).unlink()
        with pytest.raises(RecoverError, match=MODEL_DIGEST):
            run_config(FIXTURES["counter-ok"], workers=1, recover=chk)

    def test_a_checkpoint_of_another_config(self, tlc_toolchain, tmp_path):
        chk = _fake_checkpoint(tmp_path, "counter-inv")
        with pytest.raises(RecoverError, match="a checkpoint of counter-inv, not of counter-ok"):
            run_config(FIXTURES["counter-ok"], workers=1, recover=chk)

    def test_a_checkpoint_of_changed_modules(self, tlc_toolchain, tmp_path):
        chk = _fake_checkpoint(tmp_path, "counter-ok")
        with pytest.raises(RecoverError, match="changed since the checkpoint"):
            run_config(FIXTURES["counter-ok"], workers=1, recover=chk)


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
def test_the_log_is_written_while_tlc_runs(tlc_toolchain):
    """A long run's log can be followed (`tail -f`): each line is on disk once TLC printed
    it, not when the run ends."""
    seen: list[int] = []
    entry = FIXTURES["counter-ok"]
    log = work_dir() / "tlc" / f"{entry.name}.{os.getpid()}" / "tlc.log"
    r = run_config(entry, workers=1, progress=lambda g, d, q: seen.append(log.stat().st_size))
    assert r.status == "ok" and seen and min(seen) > 0


@pytest.mark.tlc
@pytest.mark.deep
def test_stop_keep_the_checkpoint_and_resume(tlc_toolchain):
    """kraft-deep-lossy (1,019,327 states, over two minutes with one worker) stopped at 90 s,
    after TLC's first one-minute checkpoint, then resumed: the resumed run ends without a
    violation, with more states than the pin (TLC explores some again), and is not taken as
    confirming the pin."""
    entry = find_entry("kraft-deep-lossy")
    first = run_config(entry, workers=1, timeout=90, checkpoint_minutes=1)
    assert first.status == "timeout" and first.checkpoint, first.mismatches
    assert first.progress_at_stop and first.progress_at_stop["distinct"] > 0
    resumed = run_config(entry, workers=1, recover=Path(first.checkpoint), timeout=3600)
    assert resumed.status == "ok" and resumed.violated is None
    assert resumed.recovered_from == first.checkpoint
    assert resumed.distinct_states >= entry.distinct_states
    assert not resumed.as_expected and "not checked" in resumed.mismatches[0]
    assert not Path(first.checkpoint).exists()          # spent


def test_a_kept_checkpoint_survives_the_next_run_of_the_same_process(tmp_path, monkeypatch):
    """Run folders are named CONFIG.PID: a second run of the config in the same process (a
    test that stops and then resumes, `tlc suite` after `tlc run` in one Python) must not
    delete the checkpoint the first one kept."""
    from kraftcore.tlc import runner
    monkeypatch.setattr(runner, "work_dir", lambda: tmp_path)
    first = runner._run_dir("cfg")
    (first / "meta" / "t").mkdir(parents=True)
    (first / "meta" / "t" / "queue.chkpt").write_bytes(b"x")
    second = runner._run_dir("cfg")
    assert second != first and (first / "meta" / "t" / "queue.chkpt").is_file()
    # a folder without a checkpoint is reused
    assert runner._run_dir("other") == runner._run_dir("other")
