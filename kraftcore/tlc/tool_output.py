"""Reading TLC's `-tool` output: framed messages, progress, verdicts and counterexamples.

With -tool, TLC frames each message as

    @!@!@STARTMSG <code>:<severity> @!@!@
    ...text...
    @!@!@ENDMSG <code> @!@!@

The codes used here are TLC's EC constants (tlc2.output.EC).  `ToolOutputReader` is fed lines
as TLC prints them (so a progress display can follow the run) and builds a `TLCOutcome`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kraftcore.tla_values import TLAValueSyntaxError, parse_state_lines
from kraftcore.values import Fn

# TLC message codes (tlc2.output.EC)
VERSION = 2262
INVARIANT_VIOLATED_INITIAL = 2107
INVARIANT_VIOLATED_BEHAVIOR = 2110
ACTION_PROPERTY_VIOLATED = 2112
DEADLOCK = 2114
TEMPORAL_VIOLATED = 2116
BEHAVIOR_UP_TO_HERE = 2121
BACK_TO_STATE = 2122
STATE = 2217
STUTTERING = 2218
COUNTER_EXAMPLE = 2264
PROGRESS = 2200
STATS = 2199
DEPTH = 2194
FINISHED = 2186
SUCCESS = 2193
PARSING_FAILED = 3002
SIMULATION_PROGRESS = 2209
SANY_START, SANY_END = 2220, 2219
SEVERITY_ERROR, SEVERITY_TLCBUG = 1, 2   # tlc2.output.MP severities; 3 = warning, 4 = state
_NOT_ERRORS = {BEHAVIOR_UP_TO_HERE, COUNTER_EXAMPLE, BACK_TO_STATE}

_FRAME = "@!@!@"
_START = re.compile(r"@!@!@STARTMSG (\d{1,9}):(\d{1,9}) @!@!@$")
_END = re.compile(r"@!@!@ENDMSG (\d{1,9}) @!@!@$")
SIMULATION_START, BFS_START = 2188, 2187   # "Running Random Simulation ...", "Running breadth-first"
_STATS = re.compile(r"([\d,]+) states generated.*?([\d,]+) distinct states found.*?([\d,]+) states left")
_PROGRESS = re.compile(r"Progress\((\d+)\).*?: ([\d,]+) states generated.*?([\d,]+) distinct states found.*?([\d,]+) states left")
_SIM_PROGRESS = re.compile(r"([\d,]+) states generated")
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_STEP_HEADER = re.compile(r"^(\d+): <(.*)>\s*$")
_BACK_TO = re.compile(r"^(\d+): Back to state(?: (\d+))?")
_ACTION_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_!]*)")
_LOCATION = re.compile(r"line (\d{1,9}), col(?:umn)? (\d{1,9})(?: to line \d+, col \d+)? of module (\w+)")
_PARSE_LOCATION = re.compile(r"at line (\d{1,9}), column (\d{1,9})")
_PARSING_FILE = re.compile(r"Parsing file (.*)$")
_VERSION = re.compile(r"Version (\S+)")


_TAIL_LINES = 8
_MAX_NESTING = 16                 # nested framed messages kept (TLC nests one or two)
_MAX_MESSAGE_LINES = 100_000     # a longer message (a huge counterexample state) is cut


_MAX_DIGITS = 19               # TLC's counts are Java longs; a longer number is not TLC's


class _Damaged(ValueError):
    """Output that TLC cannot have printed (a number too long, a broken frame)."""


def _int(s: str) -> int:
    digits = s.replace(",", "")
    if not digits or len(digits) > _MAX_DIGITS:
        raise _Damaged(f"a number of {len(digits)} digits ({s[:20]}...)")
    return int(digits)


@dataclass
class Step:
    """One state of a counterexample and the action that led to it ('Init' for the first)."""

    index: int
    action: str
    state: Fn
    location: str | None = None

    def to_json(self) -> dict:
        from kraftcore.values import to_itf
        return {"index": self.index, "action": self.action, "location": self.location,
                "state": {k: to_itf(v) for k, v in self.state.items()}}


@dataclass
class TLCError:
    """A TLC, parse or semantic error, with the place it names when there is one."""

    message: str
    module: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.module:
            where = f"module {self.module}"
            if self.line is not None:
                where += f", line {self.line}, column {self.column}"
            where += ": "
        return where + self.message


@dataclass
class TLCOutcome:
    tlc_version: str | None = None
    status: str | None = None          # ok | violation | deadlock | error (timeouts: runner)
    violated: str | None = None        # invariant / property name, "deadlock", or None
    violation_kind: str | None = None  # invariant | action-property | temporal | deadlock
    distinct_states: int | None = None
    generated_states: int | None = None
    queue_left: int | None = None
    depth: int | None = None
    counterexample: list[Step] = field(default_factory=list)
    loop_back_to: int | None = None    # lasso: the counterexample loops back to this index
    errors: list[TLCError] = field(default_factory=list)
    finished: bool = False
    # TLC could not do its job at all (out of memory, stack overflow, an internal error: EC
    # SYSTEM_* codes 1000-1099), as opposed to an error in the spec or a state
    system_errors: list[str] = field(default_factory=list)
    system_codes: list[int] = field(default_factory=list)   # their EC codes, in order


class ToolOutputReader:
    """Incremental parser of TLC -tool output.  Call `feed(line)` per line, then `finish()`."""

    def __init__(self, temporal_properties: list[str] | None = None, source: str = "TLC",
                 mode: str | None = None):
        """mode: "bfs" or "simulate" (the manifest config's); None: as TLC's start message
        says.  A bfs run is ok only with TLC's success message (EC 2193, "Model checking
        completed. No error has been found."); a simulation, which has none, only when TLC
        finished and its output is intact."""
        self.out = TLCOutcome()
        self._mode = mode
        self._success = False
        self._damage: list[str] = []        # what in the output TLC cannot have printed
        self._lineno = 0
        self._mode_seen: int | None = None
        self._temporal = temporal_properties or []
        self._source = source
        self._code: int | None = None
        self._severity = 0
        self._buf: list[str] = []
        # TLC nests messages (e.g. 2213 "cannot handle the temporal formula" framing the
        # 2280 evaluation error that explains it): the outer ones wait here
        self._outer: list[tuple[int, int, list[str]]] = []
        self._sany: list[str] = []
        self._in_sany = False
        self._last_file: str | None = None
        self._tail: list[str] = []          # the last unframed lines (the JVM's own errors)
        self.progress: tuple[int, int, int] | None = None  # generated, distinct, queue
        self.progress_depth: int | None = None   # N of the last "Progress(N)": the BFS depth

    # -- feeding -----------------------------------------------------------------------------
    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        self._lineno += 1
        if _FRAME in line:
            m = _START.match(line)
            if m:
                if self._code is not None and len(self._outer) < _MAX_NESTING:
                    self._outer.append((self._code, self._severity, self._buf))
                self._code, self._severity, self._buf = int(m.group(1)), int(m.group(2)), []
                return
            m = _END.match(line)
            if m and self._code is None:
                self._damaged("the end of a message that did not start")
                return
            if m and int(m.group(1)) != self._code:
                self._damaged(f"the end of message {m.group(1)} inside message {self._code}")
            elif not m:
                self._damaged("a broken message frame")
        else:
            m = None
        if m:
            code, severity, buf = self._code, self._severity, self._buf
            self._code = None
            if self._outer:
                self._code, self._severity, self._buf = self._outer.pop()
                if len(self._buf) + len(buf) <= _MAX_MESSAGE_LINES:
                    self._buf.extend(buf)     # the outer message's text includes the inner one
            try:
                self._message(code, severity, buf)
            except _Damaged as e:
                self._damaged(f"message {code}: {e}")
            return
        if self._code is not None:
            if len(self._buf) < _MAX_MESSAGE_LINES:
                self._buf.append(line)
        else:
            self._loose(line)

    def _damaged(self, what: str) -> None:
        if len(self._damage) < 5:
            self._damage.append(f"line {self._lineno}: {what}")
        elif len(self._damage) == 5:
            self._damage.append("...")

    def finish(self) -> TLCOutcome:
        o = self.out
        if self._sany and not o.errors and o.status == "error":
            o.errors.append(self._sany_error())
        if o.counterexample and o.violated is None and o.status in (None, "ok"):
            self._damage.append("counterexample states without the violation they show")
        if self._damage:
            # fail closed: output TLC cannot have printed is no verdict, whatever else it says
            o.status = "error"
            o.errors.append(TLCError(f"damaged {self._source} output: "
                                     + "; ".join(self._damage)))
        if o.status is None:
            simulate = self._mode == "simulate" if self._mode else \
                self._mode_seen == SIMULATION_START
            if o.errors:
                o.status = "error"
            elif o.finished and (self._success or simulate):
                o.status = "ok"
            elif o.finished:
                o.status = "error"
                o.errors.append(TLCError("TLC finished without its success message (\"Model "
                                         "checking completed. No error has been found.\")"))
            else:
                o.status = "error"
                tail = " | ".join(ln.strip() for ln in self._tail if ln.strip())
                o.errors.append(TLCError("TLC stopped before it finished (no final message)"
                                         + (f": {tail}" if tail else "")))
        return o

    # -- framed messages -----------------------------------------------------------------------
    def _message(self, code: int, severity: int, lines: list[str]) -> None:
        o = self.out
        text = "\n".join(lines).strip()
        if code == VERSION:
            m = _VERSION.search(text)
            o.tlc_version = m.group(1) if m else text
        elif code == SANY_START:
            self._in_sany = True
        elif code == SANY_END:
            self._in_sany = False
        elif code in (INVARIANT_VIOLATED_BEHAVIOR, INVARIANT_VIOLATED_INITIAL):
            m = re.search(r"Invariant (\S+) is violated", text)
            self._violation("invariant", m.group(1) if m else text)
        elif code == ACTION_PROPERTY_VIOLATED:
            m = re.search(r"Action property (\S+) is violated", text)
            self._violation("action-property", m.group(1) if m else text)
        elif code == TEMPORAL_VIOLATED:
            name = self._temporal[0] if len(self._temporal) == 1 else \
                "one of: " + ", ".join(self._temporal) if self._temporal else "temporal property"
            self._violation("temporal", name)
        elif code == DEADLOCK:
            self._violation("deadlock", "deadlock")
            o.status = "deadlock"
        elif code == STATE:
            self._state(lines)
        elif code == BACK_TO_STATE:
            m = _BACK_TO.match(text)
            if m:
                o.loop_back_to = _int(m.group(2) or m.group(1))
        elif code == STUTTERING:
            if o.counterexample:
                last = o.counterexample[-1]
                o.counterexample.append(Step(last.index + 1, "Stuttering", last.state))
        elif code in (PROGRESS, STATS):
            m = (_PROGRESS if code == PROGRESS else _STATS).search(text)
            if m:
                g = m.groups()[-3:]
                self.progress = (_int(g[0]), _int(g[1]), _int(g[2]))
                if code == PROGRESS:
                    self.progress_depth = _int(m.group(1))
                if code == STATS:
                    o.generated_states, o.distinct_states, o.queue_left = self.progress
        elif code == SIMULATION_PROGRESS:
            m = _SIM_PROGRESS.search(text)
            if m:
                self.progress = (_int(m.group(1)), 0, 0)
                o.generated_states = _int(m.group(1))
        elif code == DEPTH:
            m = _DEPTH.search(text)
            if m:
                o.depth = _int(m.group(1))
        elif code == FINISHED:
            o.finished = True
        elif code == SUCCESS:
            self._success = True
        elif code in (SIMULATION_START, BFS_START):
            self._mode_seen = code
        elif code == PARSING_FAILED:
            o.status = "error"
            o.errors.append(self._sany_error())
        elif severity in (SEVERITY_ERROR, SEVERITY_TLCBUG) and code not in _NOT_ERRORS:
            o.status = "error"
            o.errors.append(self._error_from(text))
            if 1000 <= code < 1100:
                o.system_errors.append(text.splitlines()[0] if text else f"TLC error {code}")
                o.system_codes.append(code)

    def _violation(self, kind: str, name: str) -> None:
        o = self.out
        if o.violated is None:
            o.status = "violation" if kind != "deadlock" else "deadlock"
            o.violated, o.violation_kind = name, kind

    def _state(self, lines: list[str]) -> None:
        if not lines:
            return
        m = _STEP_HEADER.match(lines[0])
        if not m:
            return
        index, header = _int(m.group(1)), m.group(2)
        if header.startswith("Initial predicate"):
            action, location = "Init", None
        else:
            n = _ACTION_NAME.match(header)
            action = n.group(1) if n else header
            loc = _LOCATION.search(header)
            location = f"{loc.group(3)}:{loc.group(1)}:{loc.group(2)}" if loc else None
        body = [ln for ln in lines[1:] if ln.strip()]
        try:
            state = parse_state_lines(body, source=f"{self._source} counterexample state {index}")
        except TLAValueSyntaxError as e:
            self.out.errors.append(TLCError(f"unreadable counterexample state {index}: {e}"))
            return
        self.out.counterexample.append(Step(index, action, state, location))

    # -- unframed lines (SANY output) --------------------------------------------------------
    def _loose(self, line: str) -> None:
        self._tail = (self._tail + [line])[-_TAIL_LINES:]
        m = _PARSING_FILE.search(line)
        if m:
            self._last_file = m.group(1).strip()
        if (self._in_sany or self._sany or "Error" in line or "***" in line) \
                and len(self._sany) < _MAX_MESSAGE_LINES:
            self._sany.append(line)

    def _sany_error(self) -> TLCError:
        text = "\n".join(self._sany)
        module = None
        if self._last_file:
            module = re.sub(r"\.tla$", "", self._last_file.rsplit("/", 1)[-1])
        m = _LOCATION.search(text)
        if "Semantic errors" in text and m:
            msg_lines = [ln.strip() for ln in text[m.end():].splitlines() if ln.strip()]
            return TLCError("semantic error: " + (msg_lines[0] if msg_lines else "see TLC output"),
                            m.group(3), int(m.group(1)), int(m.group(2)))
        m = _PARSE_LOCATION.search(text)
        if "Parse Error" in text and m:
            enc = re.search(r"Encountered (.*?) at line", text)
            return TLCError("parse error: encountered " + (enc.group(1) if enc else "?"),
                            module, int(m.group(1)), int(m.group(2)))
        lines = [ln for ln in self._sany if ln.strip() and not ln.startswith(("Parsing file",
                 "Semantic processing"))]
        return TLCError("parsing or semantic analysis failed: " + " ".join(lines[:6]), module)

    def _error_from(self, text: str) -> TLCError:
        m = _LOCATION.search(text)
        if m:
            lines = text.splitlines()
            # the first line, and the reason when TLC framed one inside (2213 around 2280)
            first = " ".join(ln.strip() for ln in lines[:2] if ln.strip()) \
                if lines and lines[0].rstrip().endswith(":") else (lines[0] if lines else "error")
            return TLCError(first, m.group(3), int(m.group(1)), int(m.group(2)))
        return TLCError(text)
