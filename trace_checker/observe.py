"""Turning a trace's observed states into codec keys, decoding each distinct value once.

For every step and variable the ITF JSON object is compared with the previous step's (most
steps change one or two variables); otherwise its compact JSON text is looked up in a memo, and
only a text never seen before is decoded (`from_itf`) and canonicalised.  A value the codec does
not hold gets id -1 when `intern` is False (no state of the graph can match it), or is added
when `intern` is True (neighbourhood mode, where the corpus's states are the sources).
Unobserved variables are None.
"""

from __future__ import annotations

import json

from kraftcore.values import ValueError_, canonical_json, from_itf
from trace_checker.codec import Codec, Key
from trace_checker.traces import Trace, TraceMalformed

__all__ = ["Observer"]

_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode


class Observer:
    def __init__(self, codec: Codec, intern: bool):
        self.codec, self.intern = codec, intern
        self.memo: list[dict[str, int]] = [{} for _ in codec.variables]

    def keys(self, trace: Trace) -> list[Key]:
        codec, memo = self.codec, self.memo
        variables = codec.variables
        prev_raw: list = [None] * len(variables)
        prev_id: list = [None] * len(variables)
        out: list[Key] = []
        for step in trace.steps:
            state = step.state
            key = []
            for i, var in enumerate(variables):
                raw = state.get(var, _MISSING)
                if raw is _MISSING:
                    key.append(None)
                    continue
                # the same value as the step before (type-strict: Python's == has False == 0
                # and 1.0 == 1, but FALSE and 0 are distinct TLA+ values)
                if prev_id[i] is not None and raw == prev_raw[i] and _same_types(raw,
                                                                                prev_raw[i]):
                    key.append(prev_id[i])
                    continue
                try:
                    text = _dumps(raw)
                except (ValueError, RecursionError, TypeError):
                    raise TraceMalformed(trace.path, step.line, f"state.{var}",
                                         "not encodable JSON (nested too deeply?)") from None
                vid = memo[i].get(text)
                if vid is None:
                    try:
                        cj = canonical_json(from_itf(raw, f"state.{var}"))
                    except ValueError_ as e:
                        raise TraceMalformed(trace.path, step.line, f"state.{var}", str(e)) from None
                    except RecursionError:
                        raise TraceMalformed(trace.path, step.line, f"state.{var}",
                                             "value nested too deeply") from None
                    vid = codec.intern(i, cj) if self.intern else codec.lookup_id(i, cj)
                    memo[i][text] = vid
                prev_raw[i], prev_id[i] = raw, vid
                key.append(vid)
            out.append(tuple(key))
        return out


_MISSING = object()


def _same_types(a, b) -> bool:
    """Whether two JSON values that compare equal have the same type at every level (bool,
    int, float, str, list, dict), so that equality means the same TLA+ value."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return all(_same_types(x, b[k]) for k, x in a.items())
    if type(a) is list:
        return all(_same_types(x, y) for x, y in zip(a, b))
    return True
