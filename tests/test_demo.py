"""The demo's corpus: trace ids are unique across its corpora (the stats job keys traces by
id), and each corpus folder holds the current run's traces only."""

from __future__ import annotations

import json

from kraftcheck.commands.demo import CORPORA, _stage_simulate


def test_demo_corpora_have_unique_trace_ids_and_no_stale_files(tmp_path):
    stale = tmp_path / "traces" / CORPORA[0][0] / "stale-0.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}\n")
    s = _stage_simulate(tmp_path, 2, False)
    assert s["ok"] and [r["traces"] for r in s["runs"]] == [2] * len(CORPORA)
    assert not stale.exists()
    ids = []
    for name, protocol, faults, cfg, _graph in CORPORA:
        files = sorted((tmp_path / "traces" / name).glob("*.jsonl"))
        assert len(files) == 2
        for f in files:
            header = json.loads(f.read_text().splitlines()[0])
            assert (header["protocol"], header["fault_profile"]) == (protocol, faults)
            assert header["trace_id"].endswith(f"@{cfg}") if cfg else "@" not in header["trace_id"]
            ids.append(header["trace_id"])
    assert len(ids) == len(set(ids)) == 2 * len(CORPORA)
