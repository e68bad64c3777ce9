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

__all__ = ["TARGETS", "Target", "mutate", "seeds", "run_target", "FuzzReport", "INTERESTING"]

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


def _json_edit(data: bytes, rng: random.Random) -> bytes:
    """Replace one node of one JSON line by an interesting value (NaN, huge int, ...)."""
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
        lines[i] = json.dumps(obj).encode()
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


def seeds(target: str) -> list[bytes]:
    return {"trace": _trace_seeds, "itf": _trace_seeds, "value": _value_seeds,
            "tlc": _tlc_seeds, "cfg": _cfg_seeds, "dump": _dump_seeds}[target]()


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
)}


@dataclass
class FuzzReport:
    target: str
    inputs: int = 0
    crashes: int = 0
    examples: list[dict] = field(default_factory=list)   # the first few crashes
    seconds: float = 0.0


def inputs(target: str, n: int, seed: int = 0) -> Iterator[bytes]:
    """n deterministic mutated inputs for `target` (the seeds themselves first)."""
    rng = random.Random(f"{target}:{seed}")
    base = seeds(target)
    for i in range(n):
        if i < len(base):
            yield base[i]
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
