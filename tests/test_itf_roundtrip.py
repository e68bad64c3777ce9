"""ITF interoperability: our ITF exports read back by the reference reader, itf-py (the
Apalache / Quint ecosystem's Python library), and written out again by it, give the same TLA+
values, state by state (kraftcore.values canonical fingerprints)."""

from __future__ import annotations

import json

import itf_py
import pytest
from typer.testing import CliRunner

from kraftcheck.cli import app
from kraftcore.values import fingerprint, from_itf, make_fn
from refimpl.trace.format import read_trace
from refimpl.trace.itf import export_itf

runner = CliRunner()


def _canonical(state_json: dict) -> str:
    return fingerprint(make_fn((k, from_itf(v, k)) for k, v in state_json.items()))


@pytest.mark.parametrize("protocol,faults", [("kraft", "chaos"), ("elr", "crashes")])
def test_itf_exports_round_trip_through_itf_py(tmp_path, protocol, faults):
    r = runner.invoke(app, ["simulate", "--protocol", protocol, "--seeds", "3", "--faults",
                            faults, "--steps", "120", "--out", str(tmp_path / "t")])
    assert r.exit_code == 0, r.output
    (trace,) = sorted((tmp_path / "t").glob("*.jsonl"))
    itf_file = export_itf(trace, tmp_path / "itf")
    doc = json.loads(itf_file.read_text())

    t = itf_py.trace_from_json(doc)            # the reader of the ITF ecosystem
    ours = read_trace(trace, decode=False)
    assert t.vars == list(ours.header["variables"])
    assert len(t.states) == len(ours.steps) > 10
    assert t.meta["trace_id"] == ours.header["trace_id"]
    for i, (st, step) in enumerate(zip(t.states, ours.steps)):
        assert st.meta["index"] == i and st.meta["action"] == step["action"]
        assert set(st.values) == set(t.vars)
        back = {k: itf_py.value_to_json(v) for k, v in st.values.items()}   # and its writer
        assert _canonical(back) == _canonical(step["state"]), f"state {i} differs"
    # the whole document, written back by itf-py, is read again to the same values
    again = itf_py.trace_from_json(json.loads(json.dumps(itf_py.trace_to_json(t))))
    assert [s.values for s in again.states] == [s.values for s in t.states]
