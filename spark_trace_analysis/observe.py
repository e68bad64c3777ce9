"""Decode one trace state (ITF JSON text) into its fingerprint and a few observation columns.

This is the only Python of the stats job that sees trace states, once per DISTINCT state (the
JVM deduplicates them first).  `state_info(text)` returns
(fingerprint, error, observation); the fingerprint is `kraftcore.values.fingerprint` of the
decoded state (an Fn from spec variable to canonical value), exactly what the trace checker and
the state-graph loader compute, so trace states join with TLC's states.

Observations are read from the spec variables (refimpl/kraft/spec_mapping.py for spec/KRaft.tla,
refimpl/elr/spec_mapping.py for spec/ELR.tla); the protocol is recognised by its variables.
docs/spark-stats.md defines every metric built on them.
"""

from __future__ import annotations

import json
from functools import lru_cache

import pyarrow as pa

from kraftcore.values import (Fn, ValueError_, canonical_json, fingerprint,
                              fingerprint_of_canonical_json, from_itf, make_fn)

__all__ = ["state_info", "decode_state", "observe", "state_info_arrow", "STATE_INFO_ARROW"]

NIL_VALUES = frozenset({"Nil", "NoLeader", "NoBroker"})

_OBS_TYPE = pa.struct([
    ("leaders", pa.list_(pa.string())), ("leader", pa.string()), ("epoch", pa.int64()),
    ("hwm_max", pa.int64()), ("hwm_min", pa.int64()),
    ("log_lens", pa.map_(pa.string(), pa.int64())), ("hwms", pa.map_(pa.string(), pa.int64())),
    ("hwm_lag", pa.int64()), ("eligible", pa.list_(pa.string())), ("lost_acked", pa.int64()),
])
STATE_INFO_ARROW = pa.struct([("fp", pa.string()), ("error", pa.string()), ("obs", _OBS_TYPE)])


def _fn(v) -> dict:
    """A per-node variable as a dict (a function over servers is an Fn)."""
    if isinstance(v, Fn):
        return v.as_dict()
    if isinstance(v, tuple) and not v:
        return {}
    raise ValueError_(f"expected a function over nodes, got {type(v).__name__}")


def _var(s: Fn, *names: str):
    """The first of several names a variable has had in the spec (renames stay readable)."""
    for n in names:
        if n in s:
            return s[n]
    raise KeyError(names[0])


def _fn_plain(v) -> dict:
    """_fn of a plain JSON value (_is_plain, no empty object anywhere): what _fn gives for the
    value _plain makes of it (an object is an Fn of its pairs; the empty array, the empty
    sequence, is the empty function)."""
    if type(v) is dict:
        return v
    if type(v) is list and not v:
        return {}
    raise ValueError_(f"expected a function over nodes, got {type(_plain(v, 0, [])).__name__}")


def _obs_kraft(s: Fn, fn=_fn) -> dict:
    role, epoch, log, hwm = (fn(s["role"]), fn(s["currentEpoch"]), fn(s["log"]),
                             fn(_var(s, "highWatermark", "hwm")))
    leaders = sorted(n for n, r in role.items() if r == "Leader")
    leader = max(leaders, key=lambda n: (epoch.get(n, 0), n)) if leaders else None
    lens = {n: len(x) for n, x in log.items()}
    return {
        "leaders": leaders, "leader": leader, "epoch": max(epoch.values(), default=0),
        "hwm_max": max(hwm.values(), default=0), "hwm_min": min(hwm.values(), default=0),
        "log_lens": lens, "hwms": dict(hwm),
        "hwm_lag": (lens.get(leader, 0) - hwm.get(leader, 0)) if leader else None,
        "eligible": None, "lost_acked": None,
    }


def _obs_elr(s: Fn) -> dict:
    leader = s["leader"]
    leader = None if leader in NIL_VALUES else leader
    log, up = _fn(s["log"]), _fn(_var(s, "alive", "brokerUp"))
    lens = {n: len(x) for n, x in log.items()}
    h = s["hwm"]
    if isinstance(h, int):  # the partition's high watermark (spec/ELR.tla)
        hwm = {leader: h} if leader else {}
        live = [h]
    else:                   # one per broker
        hwm = _fn(h)
        live = [hwm[n] for n in hwm if up.get(n)]
    lost = _lost_acked(s["acked"], log.get(leader, ())) if leader else None
    top = h if isinstance(h, int) else max(hwm.values(), default=0)
    return {
        "leaders": [leader] if leader else [], "leader": leader, "epoch": s["leaderEpoch"],
        "hwm_max": top, "hwm_min": min(live, default=None),
        "log_lens": lens, "hwms": dict(hwm),
        "hwm_lag": (lens.get(leader, 0) - hwm.get(leader, 0)) if leader else None,
        "eligible": sorted(set(s["isr"]) | set(s["elr"])), "lost_acked": lost,
    }


def _lost_acked(acked, leader_log: tuple) -> int:
    """Acknowledged records the leader's log does not hold: `acked` is a set of
    <<offset, record>> (1-based offsets) or of [offset, record] records."""
    lost = 0
    for a in acked:
        off, rec = (a[0], a[1]) if isinstance(a, tuple) else (a["offset"], a["record"])
        if not (1 <= off <= len(leader_log) and leader_log[off - 1] == rec):
            lost += 1
    return lost


def _is_int(x) -> bool:
    return type(x) is int and -2**63 <= x < 2**63


def _typed(obs: dict) -> dict:
    """`obs` when every column has its column's type (schema.OBSERVATION: node names are
    strings, epochs, HWMs and lengths 64-bit integers); a TypeError otherwise, so that a state
    whose variables hold other values is fingerprinted but not observed (an observation
    Arrow cannot hold would fail the job)."""
    names = obs["leaders"] + list(obs["log_lens"]) + list(obs["hwms"]) + (obs["eligible"] or [])
    ints = [obs["epoch"], *obs["log_lens"].values(), *obs["hwms"].values()]
    maybe = [obs[k] for k in ("hwm_max", "hwm_min", "hwm_lag", "lost_acked")]
    if (all(type(n) is str for n in names) and (obs["leader"] is None
                                                or type(obs["leader"]) is str)
            and all(map(_is_int, ints)) and all(x is None or _is_int(x) for x in maybe)):
        return obs
    raise TypeError("an observed variable holds a value of another type")


def observe(state: Fn) -> dict | None:
    """The observation columns of a decoded state, or None for an unknown set of variables."""
    if "role" in state and "currentEpoch" in state:
        return _typed(_obs_kraft(state))
    if "isr" in state and "leaderEpoch" in state:
        return _typed(_obs_elr(state))
    return None


# Plain JSON (objects, arrays, strings, Booleans, integers within +-2^53) decodes to the same
# canonical value as from_itf without its per-element checks and error paths; anything else
# (ITF tags, floats, null, big integers, deep nesting) takes from_itf itself.
_MAX_SAFE = 2**53 - 1
_PLAIN_DEPTH = 100      # well inside kraftcore.values.MAX_DEPTH: deeper values take from_itf


class _NotPlain(Exception):
    pass


def _is_plain(j, depth: int) -> bool:
    """Whether _plain would take `j` as it is, with no empty object in it (then its canonical
    text is json.dumps of `j` itself): the same test without building the value."""
    t = type(j)
    if t is str or t is bool:
        return True
    if t is int:
        return -_MAX_SAFE <= j <= _MAX_SAFE
    if depth > _PLAIN_DEPTH:
        return False
    if t is list:
        return all(_is_plain(x, depth + 1) for x in j)
    if t is dict:
        return bool(j) and all(k[:1] != "#" and _is_plain(x, depth + 1) for k, x in j.items())
    return False


def _plain(j, depth: int, empty: list):
    t = type(j)
    if t is str or t is bool:
        return j
    if t is int:
        if -_MAX_SAFE <= j <= _MAX_SAFE:
            return j
        raise _NotPlain
    if depth > _PLAIN_DEPTH:
        raise _NotPlain
    if t is list:
        return tuple([_plain(x, depth + 1, empty) for x in j])
    if t is dict:
        if not j:               # the empty function is the empty sequence: ITF [] not {}
            empty.append(True)
            return ()
        for k in j:
            if k[:1] == "#":
                raise _NotPlain
        return Fn.wrap({k: _plain(x, depth + 1, empty) for k, x in j.items()})
    raise _NotPlain


def decode_state(raw: dict) -> tuple[Fn, str]:
    """(state, fingerprint) of a decoded JSON object of spec variables; raises ValueError_
    as kraftcore.values.from_itf does.  Equal to make_fn/from_itf + fingerprint on every
    input (tests/test_spark_units.py checks it against them on generated values); plain
    JSON takes a fast path whose canonical text is json.dumps of the object itself."""
    empty: list = []
    try:
        state = Fn.wrap({k: _plain(v, 0, empty) for k, v in raw.items()})
    except (_NotPlain, RecursionError):
        state = make_fn((k, from_itf(v, f"state.{k}")) for k, v in raw.items())
        return state, fingerprint(state)
    text = canonical_json(state) if empty else json.dumps(raw, sort_keys=True,
                                                          separators=(",", ":"))
    return state, fingerprint_of_canonical_json(text)


def _state_info(text: str) -> tuple[str | None, str | None, dict | None]:
    from trace_checker.traces import loads_strict
    try:
        raw = loads_strict(text)
    except json.JSONDecodeError as e:
        return None, f"state is not JSON: {e.msg}", None
    except RecursionError:
        return None, "state is nested too deeply", None
    except ValueError as e:     # NaN / Infinity, duplicate keys, beyond Python's digit limit
        return None, f"state is not JSON: {str(e)[:100]}", None
    if not isinstance(raw, dict) or not raw:
        return None, "state is not a JSON object of spec variables", None
    if "role" in raw and "currentEpoch" in raw and _is_plain(raw, -1):
        # a plain KRaft state (the common case): fingerprinted and observed from the JSON
        # itself, as decode_state + observe would (tests/test_spark_units.py compares them)
        fp = fingerprint_of_canonical_json(json.dumps(raw, sort_keys=True,
                                                      separators=(",", ":")))
        try:
            return fp, None, _typed(_obs_kraft(raw, _fn_plain))
        except (KeyError, TypeError, ValueError, AttributeError):
            return fp, None, None
    try:
        state, fp = decode_state(raw)
    except ValueError_ as e:
        return None, f"bad ITF value: {e}", None
    try:
        obs = observe(state)
    except (KeyError, TypeError, ValueError, AttributeError):
        return fp, None, None  # a state of other variables: fingerprinted, not observed
    return fp, None, obs


@lru_cache(maxsize=65536)
def state_info(text: str) -> tuple[str | None, str | None, dict | None]:
    """(fingerprint, error, observation) of one state's JSON text; cached by text, since the
    states of bounded runs repeat.  The Spark job calls the uncached form: it sees each
    distinct state once."""
    return _state_info(text)


def _arrow_row(text: str | None) -> dict | None:
    if text is None:
        return None
    fp, err, obs = _state_info(text)
    if obs is not None:
        obs = dict(obs, log_lens=list(obs["log_lens"].items()), hwms=list(obs["hwms"].items()))
    return {"fp": fp, "error": err, "obs": obs}


def state_info_arrow(texts: pa.Array) -> pa.Array:
    """The vectorised form used by the Spark UDF: a string array -> STATE_INFO_ARROW array.
    Bounded runs repeat states, so each distinct text of the batch is converted to Arrow once
    and the result is gathered with `take` (building nested Arrow values from Python objects
    is what costs, not the cached decoding)."""
    index: dict[str | None, int] = {}
    rows: list[dict | None] = []
    picks: list[int] = []
    for t in texts.to_pylist():
        i = index.get(t)
        if i is None:
            i = index[t] = len(rows)
            rows.append(_arrow_row(t))
        picks.append(i)
    return pa.array(rows, type=STATE_INFO_ARROW).take(pa.array(picks, type=pa.int32()))
