"""Fuzzing the readers of untrusted input: seeds, mutators and one target per parser.

Each target takes bytes and either returns normally or raises one of its documented errors
(the clear "bad input" error naming file / line / field); anything else is a crash.  The
targets are shared by the hypothesis suite (tests/test_fuzz_*.py, a few hundred inputs each)
and the benchmark `benchmarks/fuzz.py` (>= 10,000 mutated inputs per parser, prints the
crash counts).

Targets:
    trace    trace_checker.traces.read_trace, then the value decoding of every step
             (trace_checker.observe.Observer), and the human summary of the verdict
    value    kraftcore.values.from_itf on JSON, canonical_json, to_tla
    tlc      kraftcore.tlc.tool_output.ToolOutputReader (TLC -tool output) and
             kraftcore.tla_values.parse_value (TLA+ values as TLC prints them)
    cfg      kraftcore.tlc.cfg.parse_cfg_text
    dump     trace_checker.dot.read_dump + split_label (TLC -dump dot files)
    itf      refimpl.trace.itf.trace_to_itf + export_itf (never writes NaN / Infinity)
    export   export itf against validate's reader: a trace export converts is one validate's
             strict reader and value decoding accept, and what it writes is ITF (strict JSON,
             every state value decodable)
    tlclog   damaged TLC -tool logs of VIOLATING runs (bfs and simulate): never read as ok,
             and the result prints through the Rich report (names escaped)
    deep     nesting 50..20,000 deep (<<, {, [, (, JSON arrays and ITF tags) through every
             entry point: parse_value, parse_state, TextParser, parse_texts, parse_cfg_text,
             read_dump + StateGraph.from_dump, ToolOutputReader, from_itf, both trace readers
    fields   header / footer / step fields of good traces set to a wrong type or removed
             (seed, fault_profile, end_reason, invariants, violations, actions, trace_id):
             validate's reader, validate_lines and export must all refuse

A target signals a LENIENT ACCEPTANCE (an input accepted that a reader must refuse) by
raising `Lenient`; it is counted apart from crashes.  The benchmark wants 0 of both.
"""

from __future__ import annotations

import json
import random
import tempfile
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kraftcore.paths import REPO_ROOT

__all__ = ["TARGETS", "Target", "mutate", "seeds", "run_target", "FuzzReport", "INTERESTING",
           "Lenient"]


class Lenient(AssertionError):
    """An input a reader accepted although it must refuse it (counted apart from crashes)."""

# Tokens that broke or could break a reader: non-JSON numbers, numbers beyond Python's digit
# limit or TLC's 32 bits, deep nesting, NUL, escape sequences, non-UTF-8 bytes, ITF tags,
# duplicate keys, keys equal across types, huge intervals, Rich markup.
INTERESTING: list[bytes] = [
    b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-0.0", b"1.5", b"2147483648",
    b"-2147483649", b"9" * 5000, b"-" + b"9" * 5000, b"[" * 3000, b"{\"a\":" * 3000,
    b"<<" * 3000, b"{" * 3000, b"(" * 3000, b"\x00", b"\\u0000", b"\xff\xfe", b"\xc3\x28",
    b"\x1b[31m", b"\\u001b[2J", b"[red]x[/red]", b'"#set"', b'"#map"', b'"#tup"',
    b'"#bigint"', b'{"#bigint":"' + b"9" * 5000 + b'"}', b'{"#set":[1,true]}',
    b'{"#map":[[1,"a"],[true,"b"]]}', b'{"a":1,"a":2}', b"1..99999999999",
    b"-2147483648..2147483647", b"null", b"true", b"\"\"", b"[]", b"{}",
    b"\\*", b"(*", b"*)", b"CONSTANTS", b"INIT", b"<-", b"|->", b":>", b"@@", b"/\\",
    b"@!@!@STARTMSG 2217:4 @!@!@\n", b"@!@!@ENDMSG 2217 @!@!@\n",
    b"@!@!@STARTMSG 1001:1 @!@!@\n", b"@!@!@STARTMSG 99999999999999999999:1 @!@!@\n",
    b"\n", b"\r\n", b"\"", b"\\", b"..", b"../../etc/passwd", b"/etc/passwd",
    b'{"config":"kraft-bug-vote-not-persisted"}', b" -> ", b'[label="', b",style = filled]",
]


def mutate(data: bytes, rng: random.Random, rounds: int | None = None) -> bytes:
    """A few random byte-level and token-level edits of `data`."""
    b = bytearray(data)
    for _ in range(rounds or rng.randint(1, 4)):
        op = rng.randrange(8)
        pos = rng.randint(0, len(b))
        if op == 0 and b:                                    # flip a byte
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:                                        # insert a token
            b[pos:pos] = rng.choice(INTERESTING)
        elif op == 2 and b:                                  # delete a span
            b[pos:pos + rng.randint(1, 64)] = b""
        elif op == 3 and b:                                  # duplicate a span
            i = rng.randrange(len(b))
            b[pos:pos] = b[i:i + rng.randint(1, 256)]
        elif op == 4:                                        # truncate
            del b[pos:]
        elif op == 5 and b:                                  # replace a span by a token
            b[pos:pos + rng.randint(1, 16)] = rng.choice(INTERESTING)
        elif op == 6 and b:                                  # a random byte
            b[rng.randrange(len(b))] = rng.randrange(256)
        else:                                                # structure-aware JSON edit
            b = bytearray(_json_edit(bytes(b), rng))
    return bytes(b)


_JSON_VALUES = [float("nan"), float("inf"), 10 ** 5000, 2 ** 31, -(2 ** 31) - 1, None, True,
                "\x1b[31m", "a\x00b", "[bold]x", {"#set": [1, True]}, {"#bigint": "9" * 5000},
                {"#map": [[1, "a"], [True, "b"]]}, {"#tup": []}, {"#unserializable": 3},
                [[[[[[]]]]]], {"#set": "x"}, 1.5, -0.0, "../x", "/etc/passwd"]


def _json_edit(data: bytes, rng: random.Random, canonical: bool = False) -> bytes:
    """Replace one node of one JSON line by an interesting value (NaN, huge int, ...);
    canonical: write the line back as the trace writer does (sorted keys, compact), so a
    reader that wants canonical lines still reads the value."""
    lines = data.split(b"\n")
    idx = [i for i, ln in enumerate(lines) if ln.strip()]
    if not idx:
        return data
    i = rng.choice(idx)
    try:
        obj = json.loads(lines[i])
    except (ValueError, RecursionError):
        return data
    nodes: list[tuple[object, object]] = []

    def walk(o, depth=0):
        if depth > 50:
            return
        if isinstance(o, dict):
            for k in o:
                nodes.append((o, k))
                walk(o[k], depth + 1)
        elif isinstance(o, list):
            for k in range(len(o)):
                nodes.append((o, k))
                walk(o[k], depth + 1)
    walk(obj)
    if not nodes:
        return data
    parent, key = rng.choice(nodes)
    parent[key] = rng.choice(_JSON_VALUES)          # type: ignore[index]
    try:
        lines[i] = (json.dumps(obj, sort_keys=True, separators=(",", ":")) if canonical
                    else json.dumps(obj)).encode()
    except (ValueError, RecursionError):
        return data
    return b"\n".join(lines)


# --------------------------------------------------------------------------- seeds

def _read(rel: str) -> bytes:
    p = REPO_ROOT / rel
    return p.read_bytes() if p.is_file() else b""


def _trace_seeds() -> list[bytes]:
    out = [p.read_bytes() for p in sorted((REPO_ROOT / "tests/fixtures/traces").glob("*.jsonl"))]
    out += [p.read_bytes() for p in sorted((REPO_ROOT / "tests/fixtures/spark/corpus").glob("*.jsonl"))]
    return [s for s in out if s] or [b'{"kind":"header"}\n']


def _value_seeds() -> list[bytes]:
    vals = [
        {"#set": [{"from": "n1", "t": 1}, {"from": "n2", "t": 2}]},
        {"#map": [[{"#tup": [1, "a"]}, 2], [{"#tup": [2, "b"]}, 3]]},
        {"n1": [{"epoch": 1, "value": "v1"}], "n2": []},
        {"#bigint": "123456789012345678901234567890"},
        [1, [2, [3, {"#set": []}]]], "Leader", True, -7,
    ]
    return [json.dumps(v).encode() for v in vals]


_TLC_OUT = b"""@!@!@STARTMSG 2262:0 @!@!@
TLC2 Version 2.15 of Day Month 20??
@!@!@ENDMSG 2262 @!@!@
@!@!@STARTMSG 2110:1 @!@!@
Invariant TypeOK is violated.
@!@!@ENDMSG 2110 @!@!@
@!@!@STARTMSG 2121:1 @!@!@
The behavior up to this point is:
@!@!@ENDMSG 2121 @!@!@
@!@!@STARTMSG 2217:4 @!@!@
1: <Initial predicate>
/\\ x = 0
/\\ y = {1, 2}
/\\ z = [a |-> <<1, "s">>, b |-> (n1 :> 1 @@ n2 :> 2)]
@!@!@ENDMSG 2217 @!@!@
@!@!@STARTMSG 2217:4 @!@!@
2: <Next line 10, col 5 to line 12, col 20 of module M>
/\\ x = 1
/\\ y = 1..3
/\\ z = [a |-> <<>>, b |-> (n1 :> 1 @@ n2 :> 2)]
@!@!@ENDMSG 2217 @!@!@
@!@!@STARTMSG 2199:0 @!@!@
12 states generated, 10 distinct states found, 0 states left on queue.
@!@!@ENDMSG 2199 @!@!@
@!@!@STARTMSG 2194:0 @!@!@
The depth of the complete state graph search is 3.
@!@!@ENDMSG 2194 @!@!@
@!@!@STARTMSG 2186:0 @!@!@
Finished in 01s at (2026-01-01 00:00:00)
@!@!@ENDMSG 2186 @!@!@
"""


def _tlc_seeds() -> list[bytes]:
    vals = [b'[a |-> <<1, "s\\"q">>, b |-> (n1 :> 1 @@ n2 :> {})]', b"{1, 2, 3}", b"1..5",
            b'<<[type |-> "Fetch", epoch |-> 2], TRUE, -3>>']
    return [_TLC_OUT] + vals


def _cfg_seeds() -> list[bytes]:
    out = [p.read_bytes() for p in sorted((REPO_ROOT / "tlc_configs").glob("*.cfg"))[:6]]
    out += [p.read_bytes() for p in sorted((REPO_ROOT / "tests/fixtures").rglob("*.cfg"))]
    return [s for s in out if s] or [b"CONSTANTS N = 3\nINIT Init\nNEXT Next\n"]


def _dump_seeds() -> list[bytes]:
    d = _read("tests/fixtures/traces/ticket-graph.dot")
    return [d[:6000]] if d else [b'strict digraph D {\n1 [label="/\\\\ x = 1",style = filled]\n'
                                b'1 -> 2 [label="A"];\n2 [label="/\\\\ x = 2"]\n}\n']


def _frame(code: int, severity: int, body: str) -> str:
    """One TLC -tool message as TLC frames it."""
    return f"@!@!@STARTMSG {code}:{severity} @!@!@\n{body}\n@!@!@ENDMSG {code} @!@!@\n"


_VERSION_MSG = _frame(2262, 0, "TLC2 Version 2.15 of Day Month 20??")
_FINISHED_MSG = _frame(2186, 0, "Finished in 01s at (2026-01-01 00:00:00)")
_COUNTER_STATES = (_frame(2217, 4, "1: <Initial predicate>\n/\\ seen = {}\n"
                                   "/\\ count = (a :> 0 @@ b :> 0)")
                   + _frame(2217, 4, "2: <Inc line 8, col 11 to line 8, col 105 of module "
                                     "Counter>\n/\\ seen = {<<b, 0>>}\n"
                                     "/\\ count = (a :> 0 @@ b :> 1)"))
_BEHAVIOUR = _frame(2121, 1, "The behavior up to this point is:")
_TLC_VIOLATIONS = {
    # an invariant violated in a bfs run
    "bfs": _TLC_OUT.decode(),
    # a simulation (TLC prints no success message in simulate mode) that found a violation
    "simulate": (_VERSION_MSG + _frame(2188, 0, "Running Random Simulation with seed 1")
                 + _frame(2110, 1, "Invariant BelowLimit is violated.") + _BEHAVIOUR
                 + _COUNTER_STATES
                 + _frame(2209, 0, "Progress(-1) at 2026-11-28 04:46:00: 13 states generated, "
                                   "-1 distinct states found, -1 states left on queue.")
                 + _FINISHED_MSG),
    # a temporal property violated (a lasso)
    "temporal": (_VERSION_MSG + _frame(2187, 0, "Running breadth-first search Model-Checking")
                 + _frame(2116, 1, "Temporal properties were violated.")
                 + _frame(2264, 1, "The following behavior constitutes a counter-example:")
                 + _frame(2217, 4, "1: <Initial predicate>\nx = 0")
                 + _frame(2122, 4, "2: Back to state: <Next line 5, col 9 to line 5, col 27 of "
                                   "module P>")
                 + _FINISHED_MSG),
    # a deadlock, with Rich markup in a value
    "deadlock": (_VERSION_MSG + _frame(2114, 1, "Deadlock reached.") + _BEHAVIOUR
                 + _frame(2217, 4, '1: <Initial predicate>\n/\\ x = 0\n'
                                   '/\\ y = [Invariant |-> "[red]x[/red]"]')
                 + _frame(2199, 0, "3 states generated, 3 distinct states found, 0 states "
                                   "left on queue.")
                 + _FINISHED_MSG),
}


def _tlclog_seeds() -> list[bytes]:
    return [(k + "\n" + v).encode() for k, v in _TLC_VIOLATIONS.items()]


_DEEP_OPEN = [("<<", ">>"), ("{", "}"), ("[a |-> ", "]"), ("(1 :> ", ")"), ("<<1, ", ">>")]


_DEEP_KINDS = [o for o, _ in _DEEP_OPEN] + ["json", "itf"]
# around the readers' limit of 200 levels, and far beyond it (the deepest are the slowest)
_DEEP_DEPTHS = [50, 199, 200, 201, 500, 1000, 3000, 3000, 20000]


def _deep_seeds() -> list[bytes]:
    return [b"<<:3000", b"{:20000", b"[a |-> :500", b"json:20000", b"itf:5000"]


def seeds(target: str) -> list[bytes]:
    return {"trace": _trace_seeds, "itf": _trace_seeds, "export": _trace_seeds,
            "fields": _trace_seeds, "value": _value_seeds, "tlc": _tlc_seeds,
            "tlclog": _tlclog_seeds, "deep": _deep_seeds, "cfg": _cfg_seeds,
            "dump": _dump_seeds}[target]()


# --------------------------------------------------------------------------- targets

class _Scratch:
    """A scratch folder for targets that read files."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="kraftcheck-fuzz-")
        self.path = Path(self._dir.name)
        self.n = 0

    def file(self, data: bytes, suffix: str) -> Path:
        self.n += 1
        p = self.path / f"in{self.n % 8}{suffix}"
        p.write_bytes(data)
        return p

    def close(self) -> None:
        self._dir.cleanup()


def _t_trace(data: bytes, scratch: _Scratch) -> None:
    from trace_checker.codec import Codec
    from trace_checker.observe import Observer
    from trace_checker.traces import TraceMalformed, read_trace
    from trace_checker import verdict as V
    p = scratch.file(data, ".jsonl")
    try:
        t = read_trace(p)
        Observer(Codec(sorted(t.variables)), intern=True).keys(t)
        r = V.out_of_scope(t, "fuzz", f"reason naming {t.trace_id} {t.bounds}")
    except TraceMalformed as e:
        r = V.malformed(str(p), e)
    summary = {"results": [r], "counts": V.count([r]), "traces": 1, "steps": r["steps"],
               "mode": "fuzz", "seconds": 0}
    V.summary_lines(summary, True)
    json.dumps(summary, allow_nan=False)


def _t_value(data: bytes, scratch: _Scratch) -> None:
    from kraftcore.values import ValueError_, canonical_json, from_itf, to_tla
    from trace_checker.traces import loads_strict
    try:
        j = loads_strict(data)
    except (ValueError, RecursionError):
        return                     # not JSON: the trace reader's concern (malformed)
    try:
        v = from_itf(j)
    except ValueError_:
        return
    canonical_json(v)
    try:
        to_tla(v)
    except ValueError_:
        pass


def _t_tlc(data: bytes, scratch: _Scratch) -> None:
    from kraftcore.tla_values import TLAValueSyntaxError, parse_value
    from kraftcore.tlc.tool_output import ToolOutputReader
    text = data.decode("utf-8", errors="backslashreplace")
    reader = ToolOutputReader(temporal_properties=["Live"])
    for line in text.splitlines(keepends=True):
        reader.feed(line)
    out = reader.finish()
    for s in out.counterexample:
        s.to_json()
    try:
        parse_value(text)
    except TLAValueSyntaxError:
        pass


def _t_cfg(data: bytes, scratch: _Scratch) -> None:
    from kraftcore.tlc.cfg import CfgError, parse_cfg
    p = scratch.file(data, ".cfg")
    try:
        parse_cfg(p)
    except CfgError:
        pass


def _t_dump(data: bytes, scratch: _Scratch) -> None:
    from trace_checker.dot import DotFormatError, read_dump, split_label
    p = scratch.file(data, ".dot")
    try:
        d = read_dump(p)
        for label in d.labels.values():
            split_label(label)
    except DotFormatError:
        pass


def _t_itf(data: bytes, scratch: _Scratch) -> None:
    from refimpl.trace.format import TraceFormatError
    from refimpl.trace.itf import export_itf
    p = scratch.file(data, ".jsonl")
    try:
        out = export_itf(p, scratch.path / "itf")
    except TraceFormatError:
        return
    text = out.read_text(encoding="utf-8")
    json.loads(text, parse_constant=_no_constant)
    out.unlink()


def _no_constant(name: str):
    raise AssertionError(f"export itf wrote {name}")


def _validate_refuses(p: Path) -> str | None:
    """Why `kraftcheck validate`'s reader (strict read + value decoding) refuses the trace at
    `p`, or None when it accepts it."""
    from trace_checker.codec import Codec
    from trace_checker.observe import Observer
    from trace_checker.traces import TraceMalformed, read_trace
    try:
        t = read_trace(p)
        Observer(Codec(t.variables), intern=True).keys(t)
    except TraceMalformed as e:
        return str(e)
    return None


def _check_itf(text: str) -> None:
    """What export wrote is ITF: strict JSON, every state value decodable (no float, no map
    listing a key twice), every variable in every state."""
    from kraftcore.values import ValueError_, from_itf
    from trace_checker.traces import loads_strict
    doc = loads_strict(text)
    for i, st in enumerate(doc["states"]):
        if set(st) != set(doc["vars"]) | {"#meta"}:
            raise Lenient(f"ITF state {i} does not hold exactly the variables")
        for k, v in st.items():
            if k != "#meta":
                try:
                    from_itf(v, f"state {i} {k}")
                except ValueError_ as e:
                    raise Lenient(f"export wrote a value that is not ITF: {e}") from None


def _t_export(data: bytes, scratch: _Scratch) -> None:
    from refimpl.trace.format import TraceFormatError
    from refimpl.trace.itf import export_itf
    p = scratch.file(data, ".jsonl")
    refused = _validate_refuses(p)
    try:
        out = export_itf(p, scratch.path / "itf")
    except TraceFormatError:
        return
    text = out.read_text(encoding="utf-8")
    out.unlink()
    if refused is not None:
        raise Lenient(f"export converted a trace validate refuses: {refused[:200]}")
    _check_itf(text)


def _t_tlclog(data: bytes, scratch: _Scratch) -> None:
    import io

    from rich.console import Console

    from kraftcheck.tlc.report import print_result
    from kraftcore.tlc.runner import TLCResult
    from kraftcore.tlc.tool_output import ToolOutputReader
    text = data.decode("utf-8", errors="backslashreplace")
    first, _, rest = text.partition("\n")
    mode = {"bfs": "bfs", "simulate": "simulate"}.get(first.strip())
    reader = ToolOutputReader(temporal_properties=["Live"], source="fuzz", mode=mode)
    for line in rest.splitlines(keepends=True):
        reader.feed(line)
    out = reader.finish()
    for st in out.counterexample:
        st.to_json()
    r = TLCResult(name="fuzz[red]", spec="M", cfg="c", profile="ci", mode=mode or "bfs",
                  status=out.status or "error", violated=out.violated, expected="Inv",
                  as_expected=False, distinct_states=out.distinct_states,
                  generated_states=out.generated_states, depth=out.depth, seconds=0.0,
                  counterexample=out.counterexample, loop_back_to=out.loop_back_to,
                  errors=out.errors, tlc_version=out.tlc_version)
    print_result(Console(file=io.StringIO(), width=120), r)
    json.dumps(r.to_json(), allow_nan=False)
    if out.status == "ok":
        raise Lenient("a damaged log of a violating run read as ok")


def _nest(spec: str) -> tuple[str, int]:
    kind, _, depth = spec.partition(":")
    try:
        n = max(1, min(int(depth or "1"), 40_000))
    except ValueError:
        n = 50
    return kind, n


def _t_deep(data: bytes, scratch: _Scratch) -> None:
    """One nesting, every entry point: each returns or raises its documented error."""
    from kraftcore.tla_values import TLAValueSyntaxError, parse_state, parse_value
    from kraftcore.tlc.cfg import CfgError, parse_cfg_text
    from kraftcore.tlc.tool_output import ToolOutputReader
    from kraftcore.values import ValueError_, from_itf
    from refimpl.trace.format import TraceFormatError, read_trace as read_format
    from trace_checker.codec import TextParser, parse_texts
    from trace_checker.dot import DotFormatError, read_dump
    from trace_checker.graph import GraphFormatError, StateGraph
    kind, n = _nest(data.decode("latin-1"))
    if kind in ("json", "itf"):
        value = ('{"#tup":[' * n + "1" + "]}" * n) if kind == "itf" else "[" * n + "1" + "]" * n
        try:
            from_itf(json.loads(value))
        except (ValueError_, RecursionError):
            pass   # json.loads' own RecursionError: the trace readers report it (below)
        good = _trace_seeds()[0].decode().splitlines()
        step = json.loads(good[1])
        var = sorted(step["state"])[0]
        good[1] = good[1].replace(json.dumps(step["state"][var], separators=(",", ":")),
                                  value, 1)
        p = scratch.file(("\n".join(good) + "\n").encode(), ".jsonl")
        _validate_refuses(p)
        try:
            read_format(p)
        except TraceFormatError:
            pass
        return
    o, c = (kind, dict(_DEEP_OPEN)[kind]) if kind in dict(_DEEP_OPEN) else _DEEP_OPEN[0]
    text = o * n + "1" + c * n
    for f in (parse_value, lambda t: parse_state("/\\ x = " + t),
              lambda t: TextParser().parse(t), lambda t: parse_texts([t, "1"])):
        try:
            f(text)
        except TLAValueSyntaxError:
            pass
    try:
        parse_cfg_text(f"CONSTANTS\n  X = {text}\nINIT Init\nNEXT Next\n", "deep.cfg")
    except CfgError:
        pass
    reader = ToolOutputReader(mode="bfs")
    for line in (f"@!@!@STARTMSG 2217:4 @!@!@\n1: <Initial predicate>\n/\\ x = {text}\n"
                 "@!@!@ENDMSG 2217 @!@!@\n").splitlines(keepends=True):
        reader.feed(line)
    reader.finish()
    label = ("/\\\\ x = " + text).replace('"', '\\"')
    p = scratch.file(f'strict digraph D {{\n1 [label="{label}",style = filled]\n'
                     f'1 -> 1 [label="A"];\n}}\n'.encode(), ".dot")
    try:
        StateGraph.from_dump(read_dump(p))
    except (DotFormatError, GraphFormatError):
        pass


# (field, line kind) -> values of a wrong type; None means "remove the field"
_WRONG = {
    ("seed", "header"): [None, 1.5, "7", True, [], {}, None],
    ("fault_profile", "header"): [None, 3, True, [], {"a": 1}, None],
    ("end_reason", "footer"): [None, 0, False, [], {}],
    ("invariants", "footer"): [None, [], "ok", 1, {"Inv": "maybe"}, {"Inv": 1}, {"": "ok"}],
    ("violations", "footer"): [None, {}, "none", 0, [1], [{"invariant": 1, "step": 0}],
                               [{"invariant": "Inv", "step": -1}],
                               [{"invariant": "Inv", "step": "3"}],
                               [{"invariant": "Inv", "step": 0, "detail": 5}]],
    ("actions", "footer"): [-1, 1.5, "9", True],
    ("trace_id", "footer"): [None, 1, "someone-else"],
    ("trace_id", "step"): [None, 1, "someone-else"],
}


def _t_fields(data: bytes, scratch: _Scratch) -> None:
    """A good trace with one header / footer / step field made wrong: every reader refuses."""
    from refimpl.trace.format import TraceFormatError, read_trace as read_format, validate_lines
    lines = [ln for ln in data.decode("utf-8", errors="replace").splitlines() if ln.strip()]
    if len(lines) < 3:
        return
    # the mutation is chosen by the input's bytes (deterministic for a seed)
    h = sum(data) + len(data)
    keys = sorted(_WRONG)
    (fld, kind) = keys[h % len(keys)]
    values = _WRONG[(fld, kind)]
    bad = values[(h // len(keys)) % len(values)]
    try:
        objs = [json.loads(x) for x in lines]
    except ValueError:
        return
    idx = {"header": [0], "footer": [len(objs) - 1],
           "step": [1 + (h % max(1, len(objs) - 2))]}[kind]
    for i in idx:
        if objs[i].get("kind") not in (kind, None):
            return
        if bad is None:
            objs[i].pop(fld, None)
        else:
            objs[i][fld] = bad
    text = "".join(json.dumps(o, sort_keys=True, separators=(",", ":")) + "\n" for o in objs)
    p = scratch.file(text.encode(), ".jsonl")
    if _validate_refuses(p) is None:
        raise Lenient(f"validate accepted {kind} {fld} = {bad!r}")
    if not validate_lines(text.splitlines()):
        raise Lenient(f"validate_lines accepted {kind} {fld} = {bad!r}")
    try:
        read_format(p)
    except TraceFormatError:
        return
    raise Lenient(f"export's reader accepted {kind} {fld} = {bad!r}")


@dataclass(frozen=True)
class Target:
    name: str
    run: Callable[[bytes, _Scratch], None]
    what: str


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("trace", _t_trace, "trace reader + value decoding + verdict summary"),
    Target("value", _t_value, "ITF value decoder (from_itf, canonical_json, to_tla)"),
    Target("tlc", _t_tlc, "TLC -tool output reader and TLA+ value parser"),
    Target("cfg", _t_cfg, "TLC .cfg parser"),
    Target("dump", _t_dump, "TLC -dump dot reader"),
    Target("itf", _t_itf, "export itf"),
    Target("export", _t_export, "export itf = validate's reader; output is ITF"),
    Target("tlclog", _t_tlclog, "damaged TLC logs of violating runs + report"),
    Target("deep", _t_deep, "deep nesting through every value entry point"),
    Target("fields", _t_fields, "header/footer/step fields of a wrong type"),
)}


@dataclass
class FuzzReport:
    target: str
    inputs: int = 0
    crashes: int = 0
    lenient: int = 0          # inputs accepted that a reader must refuse (see Lenient)
    examples: list[dict] = field(default_factory=list)   # the first few crashes
    seconds: float = 0.0


def inputs(target: str, n: int, seed: int = 0) -> Iterator[bytes]:
    """n deterministic mutated inputs for `target` (the seeds themselves first)."""
    rng = random.Random(f"{target}:{seed}")
    base = seeds(target)
    for i in range(n):
        if target == "deep":
            yield f"{rng.choice(_DEEP_KINDS)}:{rng.choice(_DEEP_DEPTHS)}".encode()
        elif target == "fields":
            data = bytearray(rng.choice(base))
            data += b" " * rng.randrange(64)          # picks the field and value to spoil
            yield bytes(data)
        elif i < len(base):
            yield base[i]
        elif target == "export" and rng.random() < 0.6:
            # values of a wrong kind in otherwise well-formed, canonical trace lines: what
            # export once converted and validate refused (floats, maps listing a key twice)
            data = rng.choice(base)
            for _ in range(rng.randint(1, 2)):
                data = _json_edit(data, rng, canonical=True)
            yield data
        elif target == "value" and rng.random() < 0.6:
            # mostly structure-aware for the decoder: byte noise rarely stays JSON
            data = rng.choice(base)
            for _ in range(rng.randint(1, 3)):
                data = _json_edit(data, rng)
            yield data
        else:
            yield mutate(rng.choice(base), rng)


def run_target(target: str, n: int, seed: int = 0, keep: int = 5) -> FuzzReport:
    """Run `n` inputs through a target; crashes are counted and the first `keep` kept."""
    import time
    t = TARGETS[target]
    rep = FuzzReport(target)
    scratch = _Scratch()
    t0 = time.monotonic()
    try:
        for data in inputs(target, n, seed):
            rep.inputs += 1
            try:
                t.run(data, scratch)
            except Lenient as e:
                rep.lenient += 1
                if len(rep.examples) < keep:
                    rep.examples.append({"input": data[:300].decode("latin-1"),
                                         "error": f"lenient: {str(e)[:300]}", "where": ""})
            except Exception as e:  # a crash: anything but the target's documented errors
                rep.crashes += 1
                if len(rep.examples) < keep:
                    rep.examples.append({"input": data[:300].decode("latin-1"),
                                         "error": f"{type(e).__name__}: {str(e)[:300]}",
                                         "where": traceback.format_exc(limit=-3)[-1500:]})
    finally:
        scratch.close()
    rep.seconds = time.monotonic() - t0
    return rep
