"""KIP-595 high watermark rules (spec/KRaftLog.tla MajorityOffset and KRaft.tla's leader
HWM; refimpl/kraft/quorum.py majority_replicated_offset, refimpl/kraft/rules.py
leader_high_watermark, follower_high_watermark).

The leader's view of the voters' end offsets is an integer array of unbounded length n
(the number of voters), sorted in decreasing order, which is exactly what the refimpl
computes on (`sorted(end_offsets, reverse=True)`); the rank in that order names the voter.
"Held by a majority" is then witnessed by the voters of rank 0 .. majority(n) - 1.  Any
number of voters, any offsets: unbounded.
"""

from __future__ import annotations

import z3

from .core import COUNTEREXAMPLE, PROVED, UNBOUNDED, Obligation, Problem
from .venn import Venn

PY = "refimpl.kraft.rules"
QUORUM = "refimpl.kraft.quorum"


def majority(n: z3.ArithRef) -> z3.ArithRef:
    """refimpl `majority(n_voters)` = n // 2 + 1."""
    return n / 2 + 1


def majority_replicated_offset(s: z3.ArrayRef, n: z3.ArithRef, q: z3.ArithRef) -> z3.ArithRef:
    """refimpl `majority_replicated_offset(end_offsets, quorum)` on the sorted offsets s."""
    return z3.If(q <= 0, z3.If(n > 0, s[0], 0), z3.If(n >= q, s[q - 1], 0))


def leader_high_watermark(s, n, start, cur, check_current_epoch: bool = True,
                          quorum: z3.ArithRef | None = None) -> z3.ArithRef:
    """refimpl `leader_high_watermark(voter_end_offsets, n_voters, epoch_start_offset,
    current_hwm, check_current_epoch, quorum)`."""
    m = majority_replicated_offset(s, n, majority(n) if quorum is None else quorum)
    if check_current_epoch:
        return z3.If(m <= start, cur, z3.If(m > cur, m, cur))
    return z3.If(m > cur, m, cur)


def follower_high_watermark(cur, leader_hwm, log_end, capped: bool = True) -> z3.ArithRef:
    """refimpl `follower_high_watermark(current_hwm, leader_hwm, log_end, capped)`."""
    new = z3.If(leader_hwm < log_end, leader_hwm, log_end) if capped else leader_hwm
    return z3.If(new > cur, new, cur)


def sorted_offsets(name: str) -> tuple[z3.ArrayRef, z3.ArithRef, list[z3.BoolRef]]:
    s, n = z3.Array(f"{name}.offsets", z3.IntSort(), z3.IntSort()), z3.Int(f"{name}.voters")
    i, j = z3.Ints("i j")
    return s, n, [n >= 1,
                  z3.ForAll([i], z3.Implies(z3.And(0 <= i, i < n), s[i] >= 0)),
                  z3.ForAll([i, j], z3.Implies(z3.And(0 <= i, i <= j, j < n), s[i] >= s[j]))]


def _show_offsets(m: z3.ModelRef, s, n) -> list[int]:
    k = min(m.eval(n, model_completion=True).as_long(), 50)
    return [m.eval(s[x], model_completion=True).as_long() for x in range(k)]


def leader_hwm(variant: str = "off"):
    """When the leader's HWM moves, it moves past the current epoch's start offset (the
    majority holds a record of the current epoch) to an offset a majority of the voters
    holds; it never decreases."""
    def build() -> Problem:
        s, n, hyps = sorted_offsets("fetch")
        start, cur = z3.Ints("epochStartOffset currentHwm")
        new = leader_high_watermark(s, n, start, cur,
                                    check_current_epoch=variant != "no-current-epoch",
                                    quorum=n / 2 if variant == "majority-off-by-one" else None)
        i = z3.Int("i")
        moved = new != cur
        goal = [("Monotone", new >= cur),
                ("HeldByMajority", z3.Implies(moved, z3.ForAll([i], z3.Implies(
                    z3.And(0 <= i, i < majority(n)), z3.And(i < n, s[i] >= new))))),
                ("PastCurrentEpochStart", z3.Implies(moved, new > start))]

        def show(m: z3.ModelRef) -> dict:
            ev = lambda e: m.eval(e, model_completion=True).as_long()  # noqa: E731
            return {"voter_end_offsets": _show_offsets(m, s, n),
                    "epoch_start_offset": ev(start), "current_hwm": ev(cur),
                    "new_hwm": ev(new)}
        return Problem(hyps + [start >= 0, cur >= 0], goal, show,
                       lambda k: [n <= k, start <= k, cur <= k, z3.ForAll([i], z3.Implies(
                           z3.And(0 <= i, i < n), s[i] <= k))])
    return build


def hwm_later_fetch_state():
    """A HWM computed from any later fetch state never decreases the old one."""
    def build() -> Problem:
        s1, n, h1 = sorted_offsets("before")
        s2, n2, h2 = sorted_offsets("after")
        start, cur = z3.Ints("epochStartOffset currentHwm")
        new1 = leader_high_watermark(s1, n, start, cur)
        new2 = leader_high_watermark(s2, n, start, new1)
        return Problem(h1 + h2 + [n2 == n, start >= 0, cur >= 0],
                       [("NeverDecreases", z3.And(new1 >= cur, new2 >= new1))],
                       lambda m: {"before": _show_offsets(m, s1, n),
                                  "after": _show_offsets(m, s2, n)})
    return build


def quorum_intersection(variant: str = "off"):
    """The voters holding the HWM (a majority) and any Vote quorum (a majority) share a voter,
    so every elected leader's quorum contains a holder of each committed record (with the Vote
    log comparison, the elected log holds it).  Venn regions: any number of voters."""
    def build() -> Problem:
        v = Venn("voters", ("H", "V"))
        h, q = v.base("H"), v.base("V")
        n = v.n()
        if variant == "majority-off-by-one":
            is_quorum = lambda s: v.card(s) >= n / 2   # noqa: E731
        else:   # spec KRaft!IsVoterMajority / IsElectionQuorum: 2 |S| > |Voters|
            is_quorum = lambda s: v.card(s) * 2 > n    # noqa: E731
        # the leader holds its own log and a candidate votes for itself: neither set is empty
        hyps = v.well_formed() + [n >= 1, is_quorum(h), is_quorum(q),
                                  v.nonempty(h), v.nonempty(q)]
        return Problem(hyps, [("HoldersMeetEveryQuorum", v.nonempty(h & q)),
                              ("RefimplMajorityIsSpecMajority",
                               (v.card(h) >= majority(n)) == (v.card(h) * 2 > n))],
                       lambda m: v.show(m, {"holders": h, "vote_quorum": q}),
                       lambda k: [v.n() <= k])
    return build


def majority_offset_is_a_count():
    """spec/KRaftLog.tla MajorityOffset is written as the NUMBER of offsets h in 1..maxOffset
    held by a quorum (Cardinality), not their maximum: equal because the held offsets are
    1..k.  Monotonicity makes them so: for h' <= h the replicas holding h' (match >= h')
    include those holding h, and a superset of a majority of V is a majority of V
    (IsMajorityOf(S, V) == 2 |S \\cap V| > |V|), so whenever h is held, every h' in 1..h is.
    Venn regions over the voters V and the replicas with match >= h (A) and >= h' (B):
    any number of replicas."""
    def build() -> Problem:
        v = Venn("replicas", ("V", "A", "B"))
        vv, a, b = v.base("V"), v.base("A"), v.base("B")
        is_quorum = lambda x: v.card(x & vv) * 2 > v.card(vv)   # noqa: E731
        return Problem(v.well_formed() + [v.subset(a, b), is_quorum(a)],
                       [("QuorumHoldingAnOffsetHoldsEveryLowerOne", is_quorum(b))],
                       lambda m: v.show(m, {"voters": vv, "holding_h": a, "holding_lower": b}),
                       lambda k: [v.n() <= k])
    return build


def follower_hwm(variant: str = "off"):
    def build() -> Problem:
        cur, lh, end = z3.Ints("currentHwm leaderHwm logEnd")
        new = follower_high_watermark(cur, lh, end, capped=variant != "uncapped")
        return Problem([cur >= 0, lh >= 0, cur <= end],
                       [("WithinLogEnd", new <= end), ("Monotone", new >= cur)],
                       lambda m: {n: m.eval(e, model_completion=True).as_long()
                                  for n, e in (("current_hwm", cur), ("leader_hwm", lh),
                                               ("log_end", end), ("new_hwm", new))},
                       lambda k: [lh <= k, end <= k])
    return build


def obligations() -> list[Obligation]:
    return [
        Obligation("kip595-leader-hwm", "kip595",
                   "The leader's HWM (majority offset with the current-epoch rule) only "
                   "moves forward, to an offset a majority of the voters holds, past the "
                   "current epoch's start offset", PROVED, UNBOUNDED, leader_hwm(),
                   spec="KRaftLog!MajorityOffset, KRaft!NewHighWatermark",
                   python=f"{QUORUM}.majority_replicated_offset, {PY}.leader_high_watermark"),
        Obligation("kip595-planted-hwm-no-current-epoch-check", "kip595",
                   "planted: no current-epoch rule", COUNTEREXAMPLE, UNBOUNDED,
                   leader_hwm("no-current-epoch"), spec="BugNoCurrentEpochRule",
                   python=f"{PY}.leader_high_watermark(check_current_epoch=False)",
                   kind="planted", refutes="PastCurrentEpochStart", note="refimpl bug hwm-no-current-epoch-check"),
        Obligation("kip595-planted-majority-off-by-one", "kip595",
                   "planted: the HWM is the offset held by n // 2 voters", COUNTEREXAMPLE,
                   UNBOUNDED, leader_hwm("majority-off-by-one"),
                   spec="KRaftLog!MajorityOffset",
                   python=f"{PY}.leader_high_watermark(quorum=n // 2)", kind="planted", refutes="HeldByMajority",
                   note="refimpl bug majority-off-by-one"),
        Obligation("kip595-majority-offset-is-a-count", "kip595",
                   "A quorum of the voters holding offset h holds every lower offset, so the "
                   "offsets a quorum holds are 1..k and their number is the largest one "
                   "(MajorityOffset's Cardinality form)", PROVED, UNBOUNDED,
                   majority_offset_is_a_count(), spec="KRaftLog!MajorityOffset",
                   python=f"{QUORUM}.majority_replicated_offset"),
        Obligation("kip595-hwm-later-fetch-state", "kip595",
                   "A HWM computed from any later fetch state never decreases the old one",
                   PROVED, UNBOUNDED, hwm_later_fetch_state(),
                   spec="KRaft!NewHighWatermark", python=f"{PY}.leader_high_watermark"),
        Obligation("kip595-hwm-holders-meet-every-vote-quorum", "kip595",
                   "A majority holding the HWM and any majority of voters intersect; "
                   "refimpl's majority(n) = n // 2 + 1 is the spec's 2 |S| > n",
                   PROVED, UNBOUNDED, quorum_intersection(),
                   spec="KRaft!IsVoterMajority, IsElectionQuorum", python=f"{QUORUM}.majority"),
        Obligation("kip595-planted-half-quorum", "kip595",
                   "planted: quorums of n // 2 voters", COUNTEREXAMPLE, UNBOUNDED,
                   quorum_intersection("majority-off-by-one"), spec="KRaft!IsVoterMajority",
                   python=f"{QUORUM}.majority", kind="planted", refutes="HoldersMeetEveryQuorum",
                   note="refimpl bug majority-off-by-one: two halves of an even voter set "
                        "are disjoint"),
        Obligation("kip595-follower-hwm", "kip595",
                   "A follower's HWM never exceeds its log end and never decreases",
                   PROVED, UNBOUNDED, follower_hwm(), spec="KRaft!HandleFetchResponse",
                   python=f"{PY}.follower_high_watermark"),
        Obligation("kip595-planted-follower-hwm-uncapped", "kip595",
                   "planted: the follower takes the leader's HWM uncapped", COUNTEREXAMPLE,
                   UNBOUNDED, follower_hwm("uncapped"), spec="BugFollowerHwmNotCapped",
                   python=f"{PY}.follower_high_watermark(capped=False)", kind="planted", refutes="WithinLogEnd",
                   note="refimpl bug follower-hwm-uncapped"),
    ]
