"""The CLI's typed choices (kraftcheck.choices), `stats --verdicts` given several times, and
Spark's JVM output kept off the terminal."""

from __future__ import annotations

import subprocess

import pytest
from typer.testing import CliRunner

from kraftcheck.cli import app
from kraftcheck.choices import choice_parser

runner = CliRunner()


@pytest.mark.parametrize("args,expect", [
    (["tlc", "list", "--profile", "cii"], "'cii' is not a TLC profile (ci, deep, bugs); did you mean 'ci'?"),
    (["tlc", "list", "--profile", "nightly"], "'nightly' is not a TLC profile (ci, deep, bugs)"),
    (["tlc", "suite", "--profile", "bug"], "did you mean 'bugs'?"),
    (["simulate", "--faults", "chaoss", "--seeds", "0"], "did you mean 'chaos'?"),
    (["simulate", "--protocol", "kraf", "--seeds", "0"], "'kraf' is not a protocol (kraft, elr, reassign); did you mean 'kraft'?"),
])
def test_a_mistyped_choice_exits_2_with_a_suggestion(args, expect):
    r = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert r.exit_code == 2
    text = " ".join(r.output.replace("│", " ").split())
    assert expect in text, text


def test_choices_are_listed_in_help_and_accepted():
    r = runner.invoke(app, ["simulate", "--help"], env={"COLUMNS": "200"})
    from refimpl.sim.faults import PROFILES
    assert "[" + "|".join(PROFILES) + "]" in r.output and "[kraft|elr|reassign]" in r.output
    r = runner.invoke(app, ["tlc", "list", "--profile", "bugs", "--json"])
    assert r.exit_code == 0 and '"profile": "bugs"' in r.output and '"profile": "ci"' not in r.output


def test_choice_parser():
    p = choice_parser(("none", "lossy"), "fault profile")
    assert p("lossy") == "lossy"
    with pytest.raises(Exception, match=r"'LOSSY' is not a fault profile \(none, lossy\); did you mean 'lossy'\?"):
        p("LOSSY")
    with pytest.raises(Exception, match=r"'zzz' is not a fault profile \(none, lossy\)$"):
        p("zzz")


def test_stats_takes_several_verdict_files(tmp_path, monkeypatch):
    import spark_trace_analysis.jobs as jobs

    seen = {}

    def fake_run_stats(corpus, out, **kw):
        seen.update(kw, corpus=corpus)
        return {"traces": 0, "steps": 0, "bad_rows": 0, "verdicts": {}, "report": str(out)}

    monkeypatch.setattr(jobs, "run_stats", fake_run_stats)
    r = runner.invoke(app, ["stats", str(tmp_path), "--out", str(tmp_path / "o"),
                            "--verdicts", "a.json", "--verdicts", "dir/"])
    assert r.exit_code == 0, r.output
    assert seen["verdicts"] == ["a.json", "dir"]
    assert seen["command"] == (f"kraftcheck stats {tmp_path} --out {tmp_path / 'o'} "
                               "--verdicts a.json --verdicts dir")


def test_the_jvm_output_goes_to_the_driver_log(tmp_path, capfd):
    """What the JVM (a child process) writes to stderr while the session starts ends up in the
    log file, and this process's stderr is back afterwards."""
    from spark_trace_analysis.session import _stderr_to

    log = tmp_path / "driver.log"
    with _stderr_to(log):
        subprocess.run(["sh", "-c", "echo 'WARN NativeCodeLoader: noise' >&2"], check=True)
    import sys
    print("after", file=sys.stderr)
    err = capfd.readouterr().err
    assert "NativeCodeLoader" not in err and "after" in err
    assert "WARN NativeCodeLoader: noise" in log.read_text()
