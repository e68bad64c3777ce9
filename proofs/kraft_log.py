"""KIP-595 log rules (spec/KRaftLog.tla; refimpl/kraft/rules.py, refimpl/kraft/log.py):
the Vote log comparison, the leader epoch cache lookup (EndOffsetForEpoch), the
DivergingEpoch check of a Fetch and the follower's truncation.

A log is a pair of integer arrays (record epochs and record values, indexed by the 0-based
Kafka offset) with an integer length: unbounded logs, epochs and offsets.  The records'
epochs are >= 1 and non-decreasing along the log (a leader appends in its own epoch, which
is larger than every epoch before it).
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from .core import COUNTEREXAMPLE, PROVED, UNBOUNDED, Obligation, Problem

PY = "refimpl.kraft.rules"


@dataclass(frozen=True)
class Log:
    epoch: z3.ArrayRef
    value: z3.ArrayRef
    length: z3.ArithRef

    @staticmethod
    def fresh(name: str) -> Log:
        return Log(z3.Array(f"{name}.epoch", z3.IntSort(), z3.IntSort()),
                   z3.Array(f"{name}.value", z3.IntSort(), z3.IntSort()),
                   z3.Int(f"{name}.length"))

    def well_formed(self, sorted_epochs: bool = True) -> list[z3.BoolRef]:
        i, j = z3.Ints("i j")
        out = [self.length >= 0,
               z3.ForAll([i], z3.Implies(z3.And(0 <= i, i < self.length), self.epoch[i] >= 1))]
        if sorted_epochs:
            out.append(z3.ForAll([i, j], z3.Implies(
                z3.And(0 <= i, i <= j, j < self.length), self.epoch[i] <= self.epoch[j])))
        return out

    def small(self, k: int) -> list[z3.BoolRef]:
        i = z3.Int("i")
        return [self.length <= k, z3.ForAll([i], z3.Implies(
            z3.And(0 <= i, i < self.length),
            z3.And(self.epoch[i] <= k, self.value[i] >= 0, self.value[i] <= k)))]

    def last_epoch(self) -> z3.ArithRef:
        """Spec `LastEpoch`; refimpl `log.last_epoch`."""
        return z3.If(self.length == 0, 0, self.epoch[self.length - 1])

    def show(self, m: z3.ModelRef) -> list[list[int]]:
        """[[epoch, value], ...] for the model's log (length capped at 50 for display)."""
        n = min(m.eval(self.length, model_completion=True).as_long(), 50)
        return [[m.eval(self.epoch[k], model_completion=True).as_long(),
                 m.eval(self.value[k], model_completion=True).as_long()] for k in range(n)]


def end_offset_for_epoch(log: Log, e: z3.ArithRef, name: str
                         ) -> tuple[z3.ArithRef, z3.ArithRef, list[z3.BoolRef]]:
    """refimpl `end_offset_for_epoch(log, e)`, the backward scan: (the epoch of the last
    record whose epoch <= e, the offset after it), (0, 0) if there is none.  Returned as
    (epoch, end, defining constraints on the fresh `end`)."""
    end = z3.Int(f"{name}.end")
    i = z3.Int("i")
    defs = [0 <= end, end <= log.length,
            z3.Or(end == 0, log.epoch[end - 1] <= e),
            z3.ForAll([i], z3.Implies(z3.And(end <= i, i < log.length), log.epoch[i] > e))]
    return z3.If(end == 0, 0, log.epoch[end - 1]), end, defs


def spec_end_offset_for_epoch(log: Log, e: z3.ArithRef, name: str
                              ) -> tuple[z3.ArithRef, list[z3.BoolRef]]:
    """Spec `EndOffsetForEpoch(l, e)`: the 0-based offset of the first record whose epoch is
    > e, or Len(l)."""
    k = z3.Int(f"{name}.k")
    i = z3.Int("i")
    return k, [0 <= k, k <= log.length,
               z3.ForAll([i], z3.Implies(z3.And(0 <= i, i < k), log.epoch[i] <= e)),
               z3.Or(k == log.length, log.epoch[k] > e)]


def spec_largest_epoch_at_most(log: Log, e: z3.ArithRef, name: str
                               ) -> tuple[z3.ArithRef, list[z3.BoolRef]]:
    """Spec `LargestEpochAtMost(l, e)`: MaxOf({0} \\cup {epochs <= e in l})."""
    lea, w = z3.Int(f"{name}.lea"), z3.Int(f"{name}.witness")
    i = z3.Int("i")
    return lea, [lea >= 0, lea <= z3.If(e >= 0, e, 0),
                 z3.ForAll([i], z3.Implies(z3.And(0 <= i, i < log.length, log.epoch[i] <= e),
                                           log.epoch[i] <= lea)),
                 z3.Or(lea == 0, z3.And(0 <= w, w < log.length, log.epoch[w] == lea))]


def is_log_up_to_date(ce, co, oe, oo) -> z3.BoolRef:
    """refimpl `is_log_up_to_date(cand_last_epoch, cand_end_offset, own_last_epoch,
    own_end_offset)`."""
    return z3.If(ce != oe, ce > oe, co >= oo)


def spec_is_up_to_date(last_epoch, end_offset, log: Log) -> z3.BoolRef:
    """Spec `IsUpToDate(lastEpoch, endOffset, l)`."""
    return z3.Or(last_epoch > log.last_epoch(),
                 z3.And(last_epoch == log.last_epoch(), end_offset >= log.length))


def log_matching(a: Log, b: Log) -> list[z3.BoolRef]:
    """The hypothesis the fetch rules rely on (spec KRaft!LogMatching and the way a leader
    appends): (1) two logs with the same epoch at an offset agree up to it; (2) the records
    of one epoch start at the same offset in every log that has them (the epoch's leader
    wrote them contiguously from its log end)."""
    i, j = z3.Ints("i j")
    return [
        z3.ForAll([i, j], z3.Implies(
            z3.And(0 <= j, j <= i, i < a.length, i < b.length, a.epoch[i] == b.epoch[i]),
            z3.And(a.epoch[j] == b.epoch[j], a.value[j] == b.value[j]))),
        # a has epoch e at i, b has it at j >= i: b has e at i too (and symmetrically)
        z3.ForAll([i, j], z3.Implies(
            z3.And(0 <= i, i <= j, i < a.length, j < b.length, a.epoch[i] == b.epoch[j]),
            b.epoch[i] == a.epoch[i])),
        z3.ForAll([i, j], z3.Implies(
            z3.And(0 <= i, i <= j, i < b.length, j < a.length, b.epoch[i] == a.epoch[j]),
            a.epoch[i] == b.epoch[i])),
    ]


@dataclass(frozen=True)
class Fetch:
    """A follower fetching at its log end with its last epoch, the leader's answer and the
    follower's truncation (refimpl diverging_epoch + truncation_offset)."""

    valid: z3.BoolRef
    div_epoch: z3.ArithRef
    div_end: z3.ArithRef
    truncate_to: z3.ArithRef
    defs: list[z3.BoolRef]


def fetch(leader: Log, follower: Log, off_by_one: bool = False) -> Fetch:
    """refimpl `diverging_epoch(leader_log, fetch_offset, last_fetched_epoch, off_by_one)` with
    FetchOffset = the follower's LEO, LastFetchedEpoch = its last epoch (KIP-595
    "FetchRequest Handling" step 3); then `truncation_offset(follower_log, epoch, end)`
    ("FetchResponse Handling" step 2).  Spec: IsValidFetchPosition, DivergingEpochFor,
    TruncateToDivergence."""
    fo, lfe = follower.length, follower.last_epoch()
    ep, end, d1 = end_offset_for_epoch(leader, lfe, "leader")
    if off_by_one:
        end = z3.If(end < leader.length, end + 1, end)
    valid = z3.Or(z3.And(fo == 0, lfe == 0), z3.And(ep == lfe, fo <= end))
    _, local, d2 = end_offset_for_epoch(follower, ep, "follower")
    return Fetch(valid, ep, end, z3.If(end < local, end, local), d1 + d2)


def _two_logs(off_by_one: bool = False):
    ld, fl = Log.fresh("leader"), Log.fresh("follower")
    f = fetch(ld, fl, off_by_one)
    hyps = ld.well_formed() + fl.well_formed() + log_matching(ld, fl) + f.defs

    def show(m: z3.ModelRef) -> dict:
        ev = lambda e: m.eval(e, model_completion=True)  # noqa: E731
        out = {"leader_log": ld.show(m), "follower_log": fl.show(m),
               "log_format": "[[epoch, value], ...] by offset",
               "fetch_offset": ev(fl.length).as_long(),
               "last_fetched_epoch": ev(fl.last_epoch()).as_long(),
               "position_valid": z3.is_true(ev(f.valid))}
        if not out["position_valid"]:
            out["diverging_epoch"] = [ev(f.div_epoch).as_long(), ev(f.div_end).as_long()]
            out["truncate_to"] = ev(f.truncate_to).as_long()
        return out
    return ld, fl, f, hyps, show


def valid_position_is_prefix(off_by_one: bool = False):
    def build() -> Problem:
        ld, fl, f, hyps, show = _two_logs(off_by_one)
        i = z3.Int("i")
        prefix = z3.And(fl.length <= ld.length, z3.ForAll([i], z3.Implies(
            z3.And(0 <= i, i < fl.length),
            z3.And(ld.epoch[i] == fl.epoch[i], ld.value[i] == fl.value[i]))))
        return Problem(hyps, [("ValidPositionIsPrefix", z3.Implies(f.valid, prefix))], show,
                       lambda k: ld.small(k) + fl.small(k))
    return build


def truncation(off_by_one: bool = False):
    def build() -> Problem:
        ld, fl, f, hyps, show = _two_logs(off_by_one)
        i = z3.Int("i")
        t = f.truncate_to
        goal = [("TruncationShrinksTheLog", z3.Implies(z3.Not(f.valid), t < fl.length)),
                ("TruncationWithinLeaderLog", z3.Implies(z3.Not(f.valid), t <= ld.length)),
                ("TruncationKeepsCommonRecords", z3.Implies(z3.Not(f.valid), z3.ForAll(
                    [i], z3.Implies(z3.And(0 <= i, i < ld.length, i < fl.length,
                                           ld.epoch[i] == fl.epoch[i]), i < t))))]
        return Problem(hyps, goal, show, lambda k: ld.small(k) + fl.small(k))
    return build


def agreement_point(epoch_shared: bool = False):
    """The literal claim: after one DivergingEpoch truncation the two logs agree up to it;
    with `epoch_shared`, only when the follower's log has a record of DivergingEpoch.Epoch (or
    that epoch is 0: truncation to the empty log)."""
    def build() -> Problem:
        ld, fl, f, hyps, show = _two_logs()
        i = z3.Int("i")
        if epoch_shared:
            w = z3.Int("w")
            hyps = hyps + [z3.Or(f.div_epoch == 0,
                                 z3.And(0 <= w, w < fl.length, fl.epoch[w] == f.div_epoch))]
        agree = z3.ForAll([i], z3.Implies(
            z3.And(0 <= i, i < f.truncate_to),
            z3.And(ld.epoch[i] == fl.epoch[i], ld.value[i] == fl.value[i])))
        return Problem(hyps, [("AgreeUpToTruncation", z3.Implies(z3.Not(f.valid), agree))],
                       show, lambda k: ld.small(k) + fl.small(k))
    return build


def end_offset_matches_spec(sorted_epochs: bool = True):
    def build() -> Problem:
        lg, e = Log.fresh("log"), z3.Int("epoch")
        ep, end, d = end_offset_for_epoch(lg, e, "refimpl")
        k, dk = spec_end_offset_for_epoch(lg, e, "spec")
        lea, dl = spec_largest_epoch_at_most(lg, e, "spec")
        hyps = lg.well_formed(sorted_epochs) + d + dk + dl + [e >= 0]

        def show(m: z3.ModelRef) -> dict:
            ev = lambda x: m.eval(x, model_completion=True).as_long()  # noqa: E731
            return {"log": lg.show(m), "epoch": ev(e), "refimpl": [ev(ep), ev(end)],
                    "spec": [ev(lea), ev(k)]}
        return Problem(hyps, [("EndOffsetAgrees", end == k), ("EpochAgrees", ep == lea)],
                       show, lambda b: lg.small(b) + [e <= b])
    return build


def vote_order(variant: str = "off"):
    def build() -> Problem:
        a, b, c = (z3.Ints(f"{x}.lastEpoch {x}.endOffset") for x in "abc")

        def up(x, y):
            if variant == "offset-only":
                return x[1] >= y[1]
            return is_log_up_to_date(x[0], x[1], y[0], y[1])
        lg = Log.fresh("voterLog")
        hyps = lg.well_formed() + [v >= 0 for v in (*a, *b, *c)]
        goal = [("Reflexive", up(a, a)),
                ("Transitive", z3.Implies(z3.And(up(a, b), up(b, c)), up(a, c))),
                ("Total", z3.Or(up(a, b), up(b, a))),
                ("AgreesWithSpecIsUpToDate",
                 up(a, (lg.last_epoch(), lg.length)) == spec_is_up_to_date(a[0], a[1], lg)),
                ("IsLexicographicOrder",
                 up(a, b) == z3.Or(a[0] > b[0], z3.And(a[0] == b[0], a[1] >= b[1])))]

        def show(m: z3.ModelRef) -> dict:
            ev = lambda x: m.eval(x, model_completion=True).as_long()  # noqa: E731
            return {"a": [ev(a[0]), ev(a[1])], "b": [ev(b[0]), ev(b[1])],
                    "c": [ev(c[0]), ev(c[1])], "voter_log": lg.show(m),
                    "format": "[lastEpoch, endOffset]"}
        return Problem(hyps, goal, show, lambda k: lg.small(k) + [
            v <= k for v in (*a, *b, *c)])
    return build


def obligations() -> list[Obligation]:
    return [
        Obligation("kip595-vote-log-comparison", "kip595",
                   "\"At least as up-to-date\" is a total preorder on (last epoch, end "
                   "offset), is the lexicographic order, and agrees with the spec's "
                   "IsUpToDate on every log", PROVED, UNBOUNDED, vote_order(),
                   spec="KRaftLog!IsUpToDate, LastEpoch", python=f"{PY}.is_log_up_to_date"),
        Obligation("kip595-planted-vote-longer-log-wins", "kip595",
                   "planted: the longer log wins whatever its last epoch", COUNTEREXAMPLE,
                   UNBOUNDED, vote_order("offset-only"), spec="KRaftLog!IsUpToDate",
                   python=f"{PY}.is_log_up_to_date", kind="planted", refutes="IsLexicographicOrder",
                   note="encoding-only variant (KIP-595 'Vote Request Handling')"),
        Obligation("kip595-end-offset-for-epoch", "kip595",
                   "On logs with non-decreasing epochs refimpl's backward scan gives the "
                   "spec's LargestEpochAtMost and EndOffsetForEpoch", PROVED, UNBOUNDED,
                   end_offset_matches_spec(),
                   spec="KRaftLog!LargestEpochAtMost, EndOffsetForEpoch",
                   python="refimpl.kraft.log.end_offset_for_epoch"),
        Obligation("kip595-planted-end-offset-unsorted-epochs", "kip595",
                   "planted: drop the hypothesis that epochs never decrease along a log",
                   COUNTEREXAMPLE, UNBOUNDED, end_offset_matches_spec(False),
                   spec="KRaftLog!EndOffsetForEpoch",
                   python="refimpl.kraft.log.end_offset_for_epoch", kind="planted", refutes="EndOffsetAgrees",
                   note="shows the hypothesis is needed: the two definitions differ on a "
                        "log whose epochs go down"),
        Obligation("kip595-fetch-valid-position-is-prefix", "kip595",
                   "Under log matching, a Fetch position the leader accepts (no "
                   "DivergingEpoch) is a prefix of the leader's log", PROVED, UNBOUNDED,
                   valid_position_is_prefix(),
                   spec="KRaftLog!IsValidFetchPosition",
                   python=f"{PY}.diverging_epoch"),
        Obligation("kip595-planted-diverging-epoch-off-by-one", "kip595",
                   "planted: DivergingEpoch.EndOffset one too large", COUNTEREXAMPLE,
                   UNBOUNDED, valid_position_is_prefix(off_by_one=True),
                   spec="KRaftLog!DivergingEpochFor",
                   python=f"{PY}.diverging_epoch(off_by_one=True)", kind="planted", refutes="ValidPositionIsPrefix",
                   note="refimpl bug diverging-epoch-off-by-one"),
        Obligation("kip595-diverging-epoch-truncation", "kip595",
                   "Under log matching, the truncation to DivergingEpoch strictly shortens "
                   "the follower's log, stays within the leader's log and never removes a "
                   "record the two logs share: reconciliation converges",
                   PROVED, UNBOUNDED, truncation(),
                   spec="KRaftLog!DivergingEpochFor, TruncateToDivergence",
                   python=f"{PY}.diverging_epoch, truncation_offset"),
        Obligation("kip595-diverging-epoch-agreement-point", "kip595",
                   "Under log matching, when the follower's log has a record of "
                   "DivergingEpoch.Epoch, the logs agree up to the truncation point",
                   PROVED, UNBOUNDED, agreement_point(epoch_shared=True),
                   spec="KRaftLog!DivergingEpochFor, TruncateToDivergence",
                   python=f"{PY}.diverging_epoch, truncation_offset"),
        Obligation("kip595-finding-diverging-epoch-one-round", "kip595",
                   "After one DivergingEpoch truncation the logs need not agree up to the "
                   "truncation point", COUNTEREXAMPLE, UNBOUNDED, agreement_point(),
                   spec="KRaftLog!TruncateToDivergence",
                   python=f"{PY}.diverging_epoch, truncation_offset", kind="finding", refutes="AgreeUpToTruncation",
                   note="Not a bug: (epoch, end offset) bounds what is known to diverge. When "
                        "the follower has no record of DivergingEpoch.Epoch, the records it "
                        "keeps may still differ from the leader's and a second Fetch round "
                        "truncates further (docs/proofs.md)."),
    ]
