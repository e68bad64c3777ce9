"""Interaction transcripts of the KIP-595 node (tests/transcripts/*.txt, runner in
tests/transcript.py): each scenario's inputs and the messages, persistence and states they
produce.  `pytest tests/test_transcripts.py --rewrite` writes the actual outputs in place."""

from __future__ import annotations

from pathlib import Path

import pytest

from transcript import TRANSCRIPTS, TranscriptError, check_file, parse, run

FILES = sorted(TRANSCRIPTS.glob("*.txt"))
SCENARIOS = {"election", "vote-rejection-stale-log", "diverging-epoch", "end-quorum-epoch",
             "hwm-current-epoch", "observer-discovery"}


def test_one_transcript_per_kip_scenario():
    assert {f.stem for f in FILES} == SCENARIOS


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_transcript(path: Path, request):
    diffs = check_file(path, rewrite=request.config.getoption("--rewrite"))
    assert not diffs, "\n\n".join(diffs) + "\n\n(run with --rewrite to accept the new output)"


def test_a_changed_expectation_is_reported(tmp_path):
    src = (TRANSCRIPTS / "election.txt").read_text()
    bad = src.replace("vote_granted=True", "vote_granted=False", 1)
    f = tmp_path / "election.txt"
    f.write_text(bad)
    diffs = check_file(f)
    assert len(diffs) == 1 and "-  send n2->n1 VoteResponse(error=NONE leader_id=- " \
        "leader_epoch=1 vote_granted=False)" in diffs[0]
    check_file(f, rewrite=True)
    assert f.read_text() == src


def test_bad_scripts_name_the_line():
    with pytest.raises(TranscriptError, match=r"line 4: deliver n1->n2: no message n1->n2"):
        run(parse("cluster voters=n1,n2,n3\n----\n\ndeliver n1->n2\n----\n")[0])
    with pytest.raises(TranscriptError, match=r"x.txt:1: a directive must be followed"):
        parse("state\nn1\n", "x.txt")
    with pytest.raises(TranscriptError, match="unknown node 'n9'"):
        run(parse("cluster voters=n1\n----\n\ntimer n9 election\n----\n")[0])
