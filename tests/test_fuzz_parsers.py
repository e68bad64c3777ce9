"""Fuzz suite (issue 10, item 8): every reader of untrusted input, fed mutated inputs by
hypothesis, either returns or raises its documented "bad input" error, never anything else.

Targets (kraftcheck/fuzz.py): the trace reader (with value decoding and the verdict summary),
the ITF value decoder, the TLC -tool output reader and TLA+ value parser, the .cfg parser, the
-dump dot reader and export itf.  Bounded (60 examples per target, derandomized by the ci
profile) to stay fast; `benchmarks/fuzz.py` runs >= 10,000 inputs per parser.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kraftcheck.fuzz import INTERESTING, TARGETS, _Scratch, mutate, run_target, seeds

EDIT = st.tuples(st.integers(0, 7), st.integers(0, 10**6), st.integers(1, 64),
                 st.sampled_from(INTERESTING), st.binary(max_size=8))


def _apply(data: bytes, edits) -> bytes:
    b = bytearray(data)
    for op, pos, n, token, raw in edits:
        pos = pos % (len(b) + 1)
        if op == 0:
            b[pos:pos] = token
        elif op == 1:
            b[pos:pos + n] = b""
        elif op == 2:
            b[pos:pos + n] = token
        elif op == 3:
            b[pos:pos] = raw
        elif op == 4:
            del b[pos:]
        elif op == 5:
            b[pos:pos] = b[pos:pos + n] * 3
        elif op == 6 and b:
            b[pos % len(b)] ^= 0x80
        else:
            b[pos:pos] = token * n
    return bytes(b)


def _fuzz(target: str):
    base = seeds(target)

    @settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])
    @given(st.integers(0, len(base) - 1), st.lists(EDIT, min_size=1, max_size=4))
    def run(i, edits):
        scratch = _Scratch()
        try:
            TARGETS[target].run(_apply(base[i], edits), scratch)
        finally:
            scratch.close()
    return run


test_fuzz_trace_reader = _fuzz("trace")
test_fuzz_value_decoder = _fuzz("value")
test_fuzz_tlc_output_parser = _fuzz("tlc")
test_fuzz_cfg_parser = _fuzz("cfg")
test_fuzz_dump_reader = _fuzz("dump")
test_fuzz_export_itf = _fuzz("itf")
# issue 35: export against validate's reader, damaged logs of violating TLC runs (a Lenient
# acceptance fails the test like a crash)
test_fuzz_export_is_as_strict_as_validate = _fuzz("export")
test_fuzz_damaged_tlc_logs_of_violating_runs = _fuzz("tlclog")


@given(st.recursive(st.one_of(st.integers(-2**70, 2**70), st.booleans(), st.text(max_size=5),
                              st.sampled_from([float("nan"), float("inf"), 1.5, None])),
                    lambda c: st.one_of(st.lists(c, max_size=3),
                                        st.dictionaries(st.sampled_from(["#set", "#map", "#tup",
                                                                         "#bigint", "a", "b"]),
                                                        c, max_size=2)), max_leaves=10))
def test_fuzz_structured_itf_values(j):
    """Arbitrary JSON-ish data (NaN, huge ints, ITF tags in odd places) through the decoder."""
    import json
    TARGETS["value"].run(json.dumps(j).encode(), None)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_benchmark_engine_finds_no_crash_in_a_short_run(target):
    """The same engine as benchmarks/fuzz.py, 150 deterministic inputs per parser (30 of the
    deep nestings, up to 20,000 levels each), no crash and no lenient acceptance."""
    n = 30 if target == "deep" else 150
    r = run_target(target, n)
    assert r.inputs == n and r.crashes == 0 and r.lenient == 0, r.examples


def test_mutations_are_deterministic():
    import random
    a = [mutate(b"{\"a\": [1, 2, 3]}", random.Random(7)) for _ in range(1)]
    b = [mutate(b"{\"a\": [1, 2, 3]}", random.Random(7)) for _ in range(1)]
    assert a == b
