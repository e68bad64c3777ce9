"""Neighbourhood mode: the spec's successors of given states, many states per TLC run.

For a batch of source states TLC runs a generated module

    ---- MODULE TCN_<hash> ----
    EXTENDS <the config's module>, TLC
    CONSTANTS TC_mv_n1, ...                      \\* model values used below (see tlagen.py)
    TC_Src == { <<v1, v2, ...>>, ... }           \\* the source states, variables in order
    TC_Init == \\E tc_s \\in TC_Src : v1 = tc_s[1] /\\ v2 = tc_s[2] /\\ ...
    TC_OneStep == TLCGet("level") < 2
    ====

with `INIT TC_Init`, the config's NEXT, `CONSTRAINT TC_OneStep` and `-dump dot,actionlabels`.
The source states are TLC's initial states (level 1); their successors (level 2) are kept in the
dump with their action labels, and nothing further is kept.  Successors are therefore exactly
those of the spec's Next, labelled as in a full dump.  Batches larger than `chunk` states are
split across runs; a run that fails is split in halves until the states TLC cannot evaluate are
isolated (they are reported, the others are expanded).

The spec's initial states come from a second generated module (`INIT` the config's Init, or
its SPECIFICATION's initial predicate; `CONSTRAINT TLCGet("level") < 1`).

Targeted runs.  For a complete-observation trace the checker knows, for each source state, the
state the trace goes to next; it needs TLC to say only whether (and by which actions) that step
is a transition.  `expand(..., targets=...)` adds `ACTION_CONSTRAINT TC_Target` with
`TC_Target == <<<<vars>>, <<vars'>>>> \\in TC_Pairs` (the observed (source, next) pairs): TLC
still computes every successor, but dumps only the observed ones, so the dump and its parsing
grow with the corpus, not with the spec's branching.  A source expanded this way is `targeted`,
not `expanded`; the full successors are computed later only where a diagnosis needs them.

Claimed actions.  A step is valid only by an edge labelled with the action the step claims
(partial.py), so a targeted run needs, of each source, only the successors of the actions its
observed steps claim (`expand(..., claims=...)`).  When every disjunct of the config's Next is
one line that TLC labels with its own operator's name (coverage.next_disjuncts), the run's
relation is

    TC_Step_A == <<vars>> \\in TC_Claim_A /\\ (A's disjunct of Next, verbatim)
    TC_Next == TC_Step_A \\/ TC_Step_B \\/ ...

with TC_Claim_A the sources claiming A; TLC labels its edges TC_Step_A, read back as A.  A
source's edges by a claimed action are exactly Next's edges with that label; the others are
never computed (a Fetch answered with any number of records, under KafkaFetchReturnsBatches,
made most of the successors of Kafka traces' states).  The graph records which actions were
judged for a step (`StateGraph.knows_step`), so a trace claiming another action of the same
step gets the source's full successors.

A conjunctive Next (KRaftHistory's `HistoryNext == (Next \\/ \\E i \\in Server : LoseDisk(i)) /\\
RecordLeaders`), whose every edge TLC labels `HistoryNext`: coverage.next_disjuncts gives each
disjunct taken with the other conjuncts, and every run (full successors too) uses
`TC_Step_A == (A's disjunct) /\\ RecordLeaders` (`distributed`), so the labels are the actions'.

Size.  States are written through `SharedValues` (tlashare.py: every distinct value once, long
sequences cut into shared pieces), and a batch is closed when its text reaches a budget
derived from TLC's heap (`text_budget`), or `chunk` states.  TLC's out-of-memory error is
raised as `TLCOutOfMemory` (the corpus cannot be judged with this heap), never turned into
verdicts.

Constants: the config's constants, except that every integer constant whose name starts with
`Max` (the suite's convention for size bounds: MaxEpoch, MaxLogLength, ...) is raised to
`size + 1`, where `size` is the largest integer, sequence length, set size or domain size in any
state of the corpus (never lowered).  A guard `x < MaxX` or `Len(log) < MaxX` then holds for
every observed quantity, so a bound never hides a successor a trace takes.  The config's
CONSTRAINT / ACTION_CONSTRAINT / SYMMETRY / INVARIANT sections are not used.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kraftcore.output import write_atomic
from kraftcore.paths import SPEC_DIR
from kraftcore.tlc.cfg import TLCConfig, parse_cfg
from kraftcore.tlc.manifest import ConfigEntry
from kraftcore.tlc.runner import run_config
from kraftcore.values import Value
from trace_checker.cache import cache_dir
from trace_checker.codec import Codec
from trace_checker.coverage import (init_relation, next_disjuncts, next_is_distributed,
                                    next_relation)
from trace_checker.dot import read_dump, split_escaped_label
from trace_checker.graph import GraphFormatError, StateGraph
from trace_checker.tlagen import ModelValues, Unwritable, cfg_constants
from trace_checker.tlashare import SharedValues

__all__ = ["Neighbourhood", "NeighbourhoodError", "TLCUnavailable", "TLCOutOfMemory",
           "raised_constants", "BOUND_PREFIX", "text_budget"]

BOUND_PREFIX = "Max"


class NeighbourhoodError(RuntimeError):
    pass


class TLCUnavailable(NeighbourhoodError):
    """TLC could not run at all (JVM or jar unusable, out of memory, timeout): no trace can
    be judged, so the run fails closed (exit 2) instead of calling traces out of scope."""


class TLCOutOfMemory(TLCUnavailable):
    """TLC ran out of heap: the batch cannot be judged; raise KRAFTCHECK_TLC_HEAP or lower
    --chunk.  Never turned into per-trace verdicts (fail closed: the CLI exits 2)."""


# A status callback: (what TLC is doing, distinct states found so far).
Status = Callable[[str], None]

_OOM = re.compile(r"OutOfMemoryError|Java ran out of memory|GC overhead limit exceeded")


def heap_bytes() -> int:
    """TLC's heap (KRAFTCHECK_TLC_HEAP, default 4g) in bytes, for sizing chunks.  A value that
    is not a heap size counts as the default here: TLC's own JVM then refuses it, in its own
    words, and the run fails closed (TLCUnavailable)."""
    text = os.environ.get("KRAFTCHECK_TLC_HEAP", "4g").strip().lower()
    m = re.fullmatch(r"([0-9]+)([kmgt]?)", text) or re.fullmatch(r"([0-9]+)([kmgt]?)", "4g")
    return int(m.group(1)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[m.group(2)]


def text_budget() -> int:
    """Characters of generated TLA+ per TLC run: SANY's syntax tree and TLC's values take about
    a hundred times the text's size, so 1/200 of the heap leaves room for the search."""
    return max(200_000, heap_bytes() // 200)


def raised_constants(cfg: TLCConfig, size: int) -> dict[str, int]:
    """The `Max*` integer constants raised to at least size + 1."""
    out = {}
    for name, v in cfg.constants.items():
        if name.startswith(BOUND_PREFIX) and type(v) is int and v < size + 1:
            out[name] = size + 1
    return out


@dataclass
class RunStats:
    runs: int = 0
    failed_runs: int = 0
    seconds: float = 0.0
    states_expanded: int = 0
    logs: list[str] = field(default_factory=list)


class Neighbourhood:
    """A growing neighbourhood graph of one spec config; `expand` asks TLC for successors."""

    def __init__(self, base: ConfigEntry, variables: Iterable[str], model_values: Iterable[str],
                 size: int, *, chunk: int = 4000, workers: int = 1, timeout: float = 900,
                 jobs: int = 1, codec: Codec | None = None, status: Status | None = None):
        self.base = base
        self.cfg = parse_cfg(base.cfg_path)
        self.variables = tuple(codec.variables) if codec else tuple(sorted(variables))
        # the config's INIT, or the initial predicate of its SPECIFICATION (HistorySpec ==
        # HistoryInit /\ [][HistoryNext]_historyVars: HistoryInit)
        self.init_name = init_relation(base) or "Init"
        # the config's NEXT, or the next-state relation of its SPECIFICATION (LiveSpec ==
        # Spec /\ Fairness: Next)
        self.next_name = next_relation(base) or "Next"
        self.overrides = raised_constants(self.cfg, size)
        self.mv_names = frozenset(model_values) | frozenset(self.cfg.model_values)
        ModelValues(self.mv_names)  # names must be identifiers: fail early
        self.graph = StateGraph(codec or Codec(self.variables), complete=False,
                                meta={"mode": "neighbourhood", "config": base.name,
                                      "raised": dict(self.overrides)})
        self.chunk, self.workers, self.timeout, self.jobs = chunk, workers, timeout, jobs
        self.stats = RunStats()
        self.unexpandable: dict[int, str] = {}
        self._writable: dict[int, str | None] = {}     # state -> why it is unwritable
        self.failed_steps: dict[tuple[int, int], str] = {}   # targeted steps TLC failed on
        self._prune: Callable[[set[int], set[tuple[int, int]]], set[int]] | None = None
        self.status = status
        self.budget = text_budget()
        self._have_inits = False
        self._disjuncts: list[tuple[str, str]] | None | bool = False    # False: not read yet
        self._claims: dict[int, frozenset[str]] | None = None
        self._distributed: bool | None = None

    # ---- generation --------------------------------------------------------------------
    def _module(self, name: str, body: str, mv: ModelValues, extends: str = "") -> str:
        base = self.base.module_path.stem
        return (f"---- MODULE {name} ----\n"
                f"\\* Generated by trace_checker.neighbourhood; do not edit.\n"
                f"EXTENDS {base}, TLC{extends}\n{mv.declarations()}{body}====\n")

    def _cfg(self, init: str, constraint: str, mv: ModelValues,
             action_constraint: str | None = None, next_name: str | None = None) -> str:
        consts = cfg_constants(self.cfg, self.overrides) + mv.bindings()
        return (f"INIT {init}\nNEXT {next_name or self.next_name}\n"
                + ("CONSTANTS\n" + "".join(f"  {c}\n" for c in consts) if consts else "")
                + f"CONSTRAINT {constraint}\n"
                + (f"ACTION_CONSTRAINT {action_constraint}\n" if action_constraint else ""))

    def _say(self, text: str) -> None:
        if self.status:
            self.status(text)

    def _run(self, tag: str, module_body: str, init: str, constraint: str, mv: ModelValues,
             action_constraint: str | None = None, extends: str = "", what: str = "TLC",
             isolate: bool = False, next_name: str | None = None):
        """One TLC run; (dump, None) or (None, why).  isolate: the run evaluates the spec on
        trace states, so TLC's evaluation error (EC GENERAL) is this batch's failure (the
        caller splits the batch to find the states at fault), not "TLC cannot run"."""
        cfg_text = self._cfg(init, constraint, mv, action_constraint, next_name)
        digest = hashlib.sha256((module_body + cfg_text + str(self.base.module_path)).encode())
        name = f"TCN_{tag}_{digest.hexdigest()[:16]}"
        # one folder per process: two checkers may generate the same module at once
        folder = cache_dir("neighbourhood") / f"{name}.{os.getpid()}"
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        if self.base.module_path.parent.resolve() != SPEC_DIR.resolve():
            for tla in self.base.module_path.parent.glob("*.tla"):
                shutil.copy2(tla, folder / tla.name)
        module = folder / f"{name}.tla"
        write_atomic(module, self._module(name, module_body, mv, extends))
        cfg = folder / f"{name}.cfg"
        write_atomic(cfg, cfg_text)
        entry = ConfigEntry(name=name, module=str(module), cfg=str(cfg), profile="ci",
                            expect="ok", description="trace checker neighbourhood",
                            kip="none", manifest="generated", workers=self.workers,
                            timeout_seconds=int(self.timeout),
                            # C1 only: a run expands at most `chunk` states, well under the
                            # size where C2 pays (kraftcore/tlc/manifest.py SMALL_RUN_STATES)
                            jit="c1")
        dump = folder / "graph.dot"
        self._say(f"{what}: TLC parsing")

        def progress(generated: int, distinct: int, queue: int) -> None:
            self._say(f"{what}: TLC {generated:,} generated, {distinct:,} distinct, "
                      f"{queue:,} on queue")
        res = run_config(entry, dump=dump, timeout=self.timeout, progress=progress)
        self._say(f"{what}: reading TLC's dump")
        self.stats.runs += 1
        self.stats.seconds += res.seconds
        self.stats.logs.append(res.log or "")
        if res.status != "ok" or not dump.is_file():
            # out of memory first: the most specific reason TLC could not judge (fail closed)
            log_text = Path(res.log).read_text(encoding="utf-8", errors="replace") if res.log else ""
            said = [e.message.strip() for e in res.errors if _OOM.search(e.message)] + \
                [ln.strip() for ln in log_text.splitlines() if _OOM.search(ln)]
            if said:
                self.stats.failed_runs += 1
                raise TLCOutOfMemory(
                    f"TLC ran out of memory (heap {os.environ.get('KRAFTCHECK_TLC_HEAP', '4g')}) "
                    f"on {what} of config {self.base.name}: {said[0].splitlines()[0]}; set "
                    f"KRAFTCHECK_TLC_HEAP higher or lower --chunk (log {res.log})")
        fatal = res.unavailable(evaluation_errors=not isolate) or (
            f"TLC timed out after {int(self.timeout)}s (log {res.log})"
            if res.status == "timeout" else None)
        if fatal:
            self.stats.failed_runs += 1
            raise TLCUnavailable(f"{self.base.name}: {fatal}")
        if res.status != "ok" or not dump.is_file():
            self.stats.failed_runs += 1
            why = "; ".join(e.message.strip().splitlines()[0] for e in res.errors[:2] if e.message.strip())
            return None, f"TLC {res.status}: {why or 'no detail'} (log {res.log})"
        try:
            raw = read_dump(dump, unescape=False)
        except ValueError as e:
            return None, f"unreadable dump: {e}"
        shutil.rmtree(folder, ignore_errors=True)
        if res.log:                      # TLC's run folder; kept (with its log) on failure
            shutil.rmtree(Path(res.log).parent, ignore_errors=True)
        return raw, None

    # ---- queries -----------------------------------------------------------------------
    def ensure_initial(self) -> None:
        """Add the spec's initial states (under the raised constants) to the graph."""
        if self._have_inits:
            return
        mv = ModelValues(self.mv_names)
        body = "TC_NoStep == TLCGet(\"level\") < 1\n"
        raw, err = self._run("init", body, self.init_name, "TC_NoStep", mv,
                             what=f"initial states ({self.base.name})")
        if raw is None:
            raise NeighbourhoodError(f"cannot compute the initial states of {self.base.name}: {err}")
        if raw.labels:
            first = raw.labels[raw.initial[0] if raw.initial else next(iter(raw.labels))]
            try:
                spec_vars = {v for v, _ in split_escaped_label(first)}
            except ValueError as e:
                raise NeighbourhoodError(f"{self.base.name}: unreadable initial state: {e}") from None
            if spec_vars != set(self.variables):
                raise NeighbourhoodError(
                    f"the trace's variables {sorted(self.variables)} are not the variables of "
                    f"{self.base.name}'s spec {sorted(spec_vars)}")
        try:
            self.graph.add_dump(raw, jobs=self.jobs, expand="none", mark_initial=True,
                                source="initial-states run")
        except GraphFormatError as e:
            raise NeighbourhoodError(str(e)) from None
        self._have_inits = True

    def expand(self, indices: Iterable[int],
               targets: Mapping[int, Iterable[int]] | None = None,
               prune: Callable[[set[int], set[tuple[int, int]]], set[int]] | None = None,
               claims: Mapping[int, Iterable[str]] | None = None
               ) -> dict[int, str]:
        """Compute the successors of the given states; returns {state: why not} for failures.

        With `targets` (source -> observed next states) TLC judges only those steps: the
        sources become `targeted` (see the module's docstring) unless already expanded.
        `prune(failed, failed_steps)`: the sources no longer needed once those sources or
        (source, next) steps have failed (every trace observing them stops, or is judged step
        by step, from there); a failing batch's remaining halves skip them, so a
        trace whose states TLC cannot evaluate from step k on costs a few runs, not a run per
        state.  Pruned sources are left as they were (a later request expands them).
        `claims` (with `targets`; source -> the actions its observed steps claim): compute
        only those actions' successors (see the module's docstring)."""
        self._prune = prune
        self._claims = None
        if targets is not None and claims is not None and self.disjuncts() is not None:
            self._claims = {i: frozenset(a) for i, a in claims.items()}
        failures: dict[int, str] = {}
        if targets is None:
            todo = [i for i in dict.fromkeys(indices)
                    if i not in self.graph.expanded and i not in self.unexpandable]
            pairs = None
        else:
            pairs = {}
            for i in dict.fromkeys(indices):
                if i in self.graph.expanded or i in self.unexpandable:
                    continue
                want = set(targets.get(i, ())) - self.graph.targeted.get(i, set())
                if want:
                    pairs[i] = want
            todo = list(pairs)
        try:
            for batch in self._batches(todo, pairs):
                self._expand_batch(batch, failures, pairs)
        finally:
            self._prune = None
            self._claims = None
        self.unexpandable.update(failures)
        return failures

    def disjuncts(self) -> list[tuple[str, str]] | None:
        """Next's disjuncts as (label, text) when a run may be restricted to claimed actions
        (coverage.next_disjuncts), else None."""
        if self._disjuncts is False:
            self._disjuncts = next_disjuncts(self.base) if self.next_name else None
        return self._disjuncts

    def distributed(self) -> bool:
        """Does every run need the relabelled relation (coverage.next_is_distributed: TLC
        labels the config's Next as one action)?"""
        if self._distributed is None:
            self._distributed = self.disjuncts() is not None and next_is_distributed(self.base)
        return self._distributed

    def _batches(self, todo: list[int], pairs: dict[int, set[int]] | None) -> list[list[int]]:
        """Cut `todo` into runs of at most `chunk` sources whose text fits the heap budget
        (estimated by writing them: values shared with earlier states of the run are free)."""
        out: list[list[int]] = []
        cur: list[int] = []
        sv = SharedValues(ModelValues(self.mv_names))

        def add(sv: SharedValues, i: int) -> None:
            try:
                self._write(sv, i, f"state {i}")
                for d in (pairs or {}).get(i, ()):
                    self._write(sv, d, f"state {d}")
            except Unwritable:
                pass                    # reported by _expand_batch
        for i in todo:
            add(sv, i)
            if cur and (len(cur) >= self.chunk or sv.bytes > self.budget):
                out.append(cur)
                cur = []
                sv = SharedValues(ModelValues(self.mv_names))
                add(sv, i)
            cur.append(i)
        if cur:
            out.append(cur)
        return out

    def why_unwritable(self, i: int) -> str | None:
        """Why state i cannot be written into a generated module (a value TLC cannot hold),
        or None.  Decided on the state alone, so never on which other traces are checked."""
        if i not in self._writable:
            try:
                self._write(SharedValues(ModelValues(self.mv_names)), i, f"state {i}")
                self._writable[i] = None
            except Unwritable as e:
                self._writable[i] = f"cannot be written for TLC: {e}"
        return self._writable[i]

    def _try_write(self, sv: SharedValues, i: int, refs: dict[int, str]) -> str | None:
        """State i written into this run's text (once), or None when it cannot be (the
        reason is kept for why_unwritable).  A failed write may leave definitions of the
        state's writable parts in `sv`: unused, they change nothing."""
        if i in refs:
            return refs[i]
        if self._writable.get(i) is not None:
            return None
        try:
            refs[i] = self._write(sv, i, f"state {i}")
        except Unwritable as e:
            self._writable[i] = f"cannot be written for TLC: {e}"
            return None
        self._writable[i] = None
        return refs[i]

    def _write(self, sv: SharedValues, i: int, where: str) -> str:
        key = self.graph.states[i]
        codec = self.graph.codec
        return sv.state([(vid, codec.value(n, vid)) for n, vid in enumerate(key)], where)

    def _expand_batch(self, batch: list[int], failures: dict[int, str],
                      pairs: dict[int, set[int]] | None = None) -> None:
        if self._prune is not None and (failures or self.failed_steps):
            dead = self._prune(set(failures), set(self.failed_steps))
            batch = [i for i in batch if i not in dead]
            if not batch:
                return
        mv = ModelValues(self.mv_names)
        sv = SharedValues(mv)
        refs: dict[int, str] = {}
        ok = []
        want: dict[int, list[int]] = {}     # the writable observed targets of each source
        for i in batch:
            if self._try_write(sv, i, refs) is None:
                failures[i] = self._writable[i]
                continue
            # An unwritable target concerns only the traces that observed it (the corpus
            # driver puts them out of scope); the source's other steps are still judged.
            want[i] = [d for d in sorted((pairs or {}).get(i, ()))
                       if self._try_write(sv, d, refs) is not None]
            if pairs is None or want[i]:
                ok.append(i)
        if not ok:
            return
        conj = " /\\ ".join(f"{v} = tc_s[{n}]" for n, v in enumerate(self.variables, 1))
        body = (sv.text()
                + "TC_Src == {" + ", ".join(refs[i] for i in ok) + "}\n"
                + f"TC_Init == \\E tc_s \\in TC_Src : {conj}\n"
                + "TC_OneStep == TLCGet(\"level\") < 2\n")
        action_constraint = next_name = None
        claims = self._claims
        now = "<<" + ", ".join(self.variables) + ">>"
        if pairs is not None:
            nxt = "<<" + ", ".join(f"{v}'" for v in self.variables) + ">>"
            body += ("TC_Pairs == {" + ", ".join(
                f"<<{refs[i]}, {refs[d]}>>" for i in ok for d in want[i]) + "}\n"
                     + f"TC_Target == <<{now}, {nxt}>> \\in TC_Pairs\n")
            action_constraint = "TC_Target"
        if (pairs is not None and claims is not None) or self.distributed():
            # claimed actions only; or every action, when TLC labels the config's Next as one
            # action (coverage._alternatives: KRaftHistory's HistoryNext)
            steps = self.disjuncts() or []
            for a, text in steps:
                if pairs is not None and claims is not None:
                    srcs = [refs[i] for i in ok if a in claims.get(i, ())]
                    body += (f"TC_Claim_{a} == {{" + ", ".join(srcs) + "}\n"
                             f"TC_Step_{a} == {now} \\in TC_Claim_{a} /\\ ({text})\n")
                else:
                    body += f"TC_Step_{a} == {text}\n"
            body += "TC_Next ==\n" + "".join(f"    \\/ TC_Step_{a}\n" for a, _ in steps)
            next_name = "TC_Next"
        what = (f"{'steps of ' if pairs is not None else 'successors of '}{len(ok)} states "
                f"({self.base.name}{', bounds raised' if self.overrides else ''})")
        raw, err = self._run("nbhd", body, "TC_Init", "TC_OneStep", mv, action_constraint,
                             ", Sequences" if sv.uses_concat else "", what, isolate=True,
                             next_name=next_name)
        if raw is not None and next_name is not None:
            # TC_Step_A is A's disjunct of Next: its edges are Next's edges labelled A
            raw.edges = [(s, d, a[len("TC_Step_"):] if a.startswith("TC_Step_") else a)
                         for s, d, a in raw.edges]
        if raw is None:
            if len(ok) == 1 and pairs is not None and len(want[ok[0]]) > 1:
                # one source, several observed steps: TLC compares each candidate successor
                # with every pair, so one pair TLC cannot evaluate (a string where the spec has
                # an integer) fails them all; judge the steps in halves, so that only the
                # traces taking the failing step lose it
                i, ds = ok[0], want[ok[0]]
                half = len(ds) // 2
                self._expand_batch([i], failures, {i: set(ds[:half])})
                self._expand_batch([i], failures, {i: set(ds[half:])})
                return
            if len(ok) == 1 and pairs is not None:
                # this one step cannot be judged by a targeted run; the source stays
                # expandable, so a trace taking it gets the source's full successors
                self.failed_steps[(ok[0], want[ok[0]][0])] = err or "TLC failed"
                return
            if len(ok) == 1:
                failures[ok[0]] = err or "TLC failed"
                return
            half = len(ok) // 2
            self._expand_batch(ok[:half], failures, pairs)
            self._expand_batch(ok[half:], failures, pairs)
            return
        try:
            tid_to_state = self.graph.add_dump(raw, jobs=self.jobs, expand="none",
                                               mark_initial=False, source="neighbourhood run")
        except GraphFormatError as e:
            for i in ok:
                failures[i] = str(e)
            return
        taken = {tid_to_state[t] for t in raw.initial}
        self.stats.states_expanded += len(ok)
        for i in ok:
            if i not in taken:
                failures[i] = "TLC did not take this state as an initial state"
            elif pairs is None:
                self.graph.expanded.add(i)
                self.graph.targeted.pop(i, None)
            else:
                self.graph.targeted.setdefault(i, set()).update(want[i])
                for d in want[i]:
                    if claims is None:
                        self.graph.step_actions.pop((i, d), None)
                    else:
                        self.graph.step_actions[(i, d)] = claims.get(i, frozenset())
