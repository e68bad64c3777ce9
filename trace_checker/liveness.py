"""Liveness on traces: a timer action that stays enabled past its configured timeout.

The spec abstracts time away: KRaft.tla's Timeout(i) may fire at any moment, and its fairness
(`Fairness`: WF_vars(Timeout(i)) for every voter) only says that a timer continuously enabled
fires *eventually*.  A finite trace can never violate "eventually"; but a trace carries virtual
time (`time_ms`), and the implementation promises more than fairness: the timer fires within its
configured timeout.  This module checks that promise, per node, for the timers of KIP-595:

* **fetch timeout** (KIP-595 §"Vote", condition 1; quorum.fetch.timeout.ms): a voter that is
  a Follower of a leader which has observably stopped leading its epoch (that replica is not
  Leader in it any more: crashed and restarted, resigned, or moved to another epoch) can get no
  successful Fetch response from it any more, so its fetch timer must expire and it must start
  an election (spec action `Timeout`).
* **election timeout** (KIP-595 §"Vote", conditions 2-3; quorum.election.timeout.ms plus the
  random back-off of quorum.election.backoff.max.ms): a voter that is Unattached or Voted
  without a known leader, a Candidate, or Resigned must start a (new) election.
* **leader progress timeout** (KIP-595 revision, §"Leader Progress Timeout"; Kafka uses
  quorum.fetch.timeout.ms): a Leader whose epoch is followed by no majority (itself plus the
  voters that are its Followers in that epoch) cannot be receiving Fetch requests from a
  majority, so it must give up leadership (spec action `LeaderProgressTimeout`).

An obligation of node i is *enabled* from the first step after which its condition holds, for
the same condition key (role, epoch, leader), and is discharged by any step after which the
condition no longer holds.  It is *violated* when node i is seen acting (a step whose
`params.node` is i, other than a Restart) at a virtual time later than enabled + bound while
the obligation is still enabled: the node was alive when its timer should have fired, and it
had not.  The evidence-of-life rule is what keeps a crashed node (whose last state the trace
keeps until its Restart step, see docs/trace-format.md) from being flagged; a Restart of i
discharges i's obligations (the timers are re-armed on restart).  The spec's bounds are
respected: no obligation in an epoch >= MaxEpoch or for a voter outside TimeoutVoters (the
spec's guards of Timeout / LeaderProgressTimeout), read from the config the trace is judged
under (`LivenessJudge`: the user's --graph / --config, or the config the header resolved to),
never from the trace's own header; MaxEpoch bounds only a trace that stays within it (one
whose epochs go beyond it was not run under it, and every epoch has its timers).  The states are read
as decoded TLA+ values, so every ITF spelling of a function (`{"n1": ..}` or `#map`) is the
same state here as in the step check.  A trace this module cannot judge (it omits a variable
the timers depend on, or has no virtual time) is reported as such (`NotJudged`), never as
passing.

The bounds (`TimerBounds`) are deliberately generous: the configured timeout, plus the largest
random back-off, plus quorum.request.timeout.ms for a response still in flight (the simulator's
latencies are below 100 ms).  Each bound starts no earlier than the implementation's own timer
(the condition is observed only once its cause is visible), so a correct implementation cannot
exceed it; a timer that is never armed, never fires, or fires far too late, does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from kraftcore.tlc.cfg import parse_cfg
from kraftcore.tlc.manifest import ConfigEntry
from kraftcore.values import ValueError_, from_itf
from trace_checker.modules import spec_closure
from trace_checker.traces import Trace

__all__ = ["TimerBounds", "Obligation", "LivenessViolation", "LivenessJudge", "NotJudged",
           "liveness_judge", "check_liveness", "judge_liveness", "SPEC_MODULES", "NEEDED"]

SPEC_MODULES = ("KRaft", "KRaftReassign")      # the modules whose timers this module knows
NEEDED = ("role", "currentEpoch", "leaderId", "followerEndOffset")   # KRaft.tla's variables
# a replica's crash and recovery (KRaft.tla Restart; KRaftHistory.tla LoseDisk, a restart with
# an empty disk): its timers are re-armed, so its obligations start again
RESTARTS = ("Restart", "LoseDisk")
# the network's own steps (docs/trace-format.md): no replica acts, no params.node
NETWORK_ACTIONS = ("DropMessage", "DuplicateMessage")
VOTER_SET = "voterSet"          # KRaftReassign.tla: the voter set each replica acts on
# KRaft.tla's per-replica variables ([Server -> ...]): a change of replica i's entry is i acting
PER_REPLICA = NEEDED + ("votedId", "log", "highWatermark", "votesGranted", "votesRejected",
                        "fetchedSinceCheck")


class NotJudged(Exception):
    """The trace's liveness cannot be judged (the message says why)."""


@dataclass(frozen=True)
class LivenessJudge:
    """What the timers' obligations take from the judge config (KRaft.tla's guards)."""
    config: str
    max_epoch: int | None = None                  # None: no epoch bound
    timeout_voters: frozenset[str] | None = None  # None: every voter's timer may fire
    # KRaftReassign: each replica's voters are its own voterSet[i] (KIP-642 "Each voter must
    # act on the information they have in their own log"), not KRaft's fixed Voters
    voter_sets: bool = False


def liveness_judge(entry: ConfigEntry) -> LivenessJudge | None:
    """The liveness judge of a config: None when its module is not built on one whose timers
    this module knows (EXTENDS, transitively: MCKRaftBackoff is; MCELR is not)."""
    closure = spec_closure(entry.module_path)
    if not closure & set(SPEC_MODULES):
        return None
    consts = dict(parse_cfg(entry.cfg_path).constants)
    me, tv = consts.get("MaxEpoch"), consts.get("TimeoutVoters")
    return LivenessJudge(entry.name, me if type(me) is int else None,
                         frozenset(x for x in tv if type(x) is str)
                         if isinstance(tv, frozenset) else None,
                         voter_sets="KRaftReassign" in closure)


@dataclass(frozen=True)
class TimerBounds:
    """KIP-595 "Configurations" (Kafka's defaults) and the bounds derived from them."""
    fetch_timeout_ms: int = 2000            # quorum.fetch.timeout.ms
    election_timeout_ms: int = 1000         # quorum.election.timeout.ms
    election_backoff_max_ms: int = 1000     # quorum.election.backoff.max.ms
    request_timeout_ms: int = 2000          # quorum.request.timeout.ms

    @property
    def fetch(self) -> int:
        return self.fetch_timeout_ms + self.request_timeout_ms

    @property
    def election(self) -> int:
        # the election timer is the timeout plus a random jitter of up to max(timeout, back-off)
        return (self.election_timeout_ms + max(self.election_timeout_ms,
                                                self.election_backoff_max_ms)
                + self.request_timeout_ms)

    @property
    def progress(self) -> int:
        # Kafka checks the quorum every 1.5 x quorum.fetch.timeout.ms
        return 2 * self.fetch_timeout_ms + self.request_timeout_ms


@dataclass(frozen=True)
class Obligation:
    timer: str           # "fetch-timeout" | "election-timeout" | "leader-progress-timeout"
    action: str          # the spec action that must be taken
    key: tuple           # the condition's identity: (role, epoch, leader)


@dataclass
class LivenessViolation:
    node: str
    timer: str
    action: str
    enabled_at_step: int
    enabled_at_ms: int
    bound_ms: int
    seen_at_step: int           # node i acting after the deadline, the obligation still open
    seen_at_ms: int
    condition: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        return (f"liveness: {self.node}'s {self.timer} never fired: {self.action} was enabled "
                f"from step {self.enabled_at_step} ({self.enabled_at_ms} ms) and {self.node} was "
                f"still acting at step {self.seen_at_step} ({self.seen_at_ms} ms), "
                f"{self.seen_at_ms - self.enabled_at_ms} ms later (bound {self.bound_ms} ms)")


def _decoded_states(trace: Trace, needed: tuple[str, ...] = NEEDED) -> list[dict]:
    """The timers' variables of every step, decoded (each distinct JSON text once); raises
    NotJudged when a step omits one or it is not a function of the servers."""
    memo: dict[str, object] = {}
    out = []
    for step in trace.steps:
        st = {}
        for var in needed:
            if var not in step.state:
                raise NotJudged(f"step {step.index} (line {step.line}) does not observe {var}")
            raw = step.state[var]
            try:
                text = json.dumps(raw, sort_keys=True)
                v = memo.get(text)
                if v is None:
                    v = memo[text] = from_itf(raw, f"state.{var}")
            except (ValueError, ValueError_, RecursionError, TypeError) as e:
                raise NotJudged(f"step {step.index}: {var} is not readable: {e}") from None
            if not isinstance(v, Mapping):
                raise NotJudged(f"step {step.index}: {var} is not a function of the servers")
            st[var] = v
        out.append(st)
    return out


def _changed_nodes(prev: Mapping, state: Mapping) -> set[str]:
    """The replicas whose own (per-replica) variables differ between two decoded states."""
    out: set[str] = set()
    for var, fn in state.items():
        before = prev.get(var)
        if before is None or fn == before:
            continue
        for k in set(fn) | set(before):
            if type(k) is str and fn.get(k) != before.get(k):
                out.add(k)
    return out


def _obligations(state: Mapping, i: str, voters: set[str], max_epoch: int | None) -> list:
    r"""The timer obligations of node i after a step (KRaft.tla's variable names); `voters`:
    the voters i acts on (KRaft.tla VotersOf(i)).  Timeout needs i \in VotersOf(i) (an
    observer has no election timer); the leader progress timeout counts a majority of them."""
    role, epoch = state["role"].get(i), state["currentEpoch"].get(i)
    leader = state["leaderId"].get(i)
    if type(epoch) is not int or (max_epoch is not None and epoch >= max_epoch):
        return []
    out = []
    if role != "Leader" and i not in voters:
        return []
    if role == "Follower" and leader in state["role"]:
        if not (state["role"].get(leader) == "Leader"
                and state["currentEpoch"].get(leader) == epoch):
            out.append(Obligation("fetch-timeout", "Timeout", (role, epoch, leader)))
    elif role in ("Unattached", "Voted") and leader == "Nil" or role in ("Candidate", "Resigned"):
        out.append(Obligation("election-timeout", "Timeout", (role, epoch, leader)))
    elif role == "Leader":
        following = sum(1 for j in voters if j == i or (
            state["role"].get(j) == "Follower" and state["leaderId"].get(j) == i
            and state["currentEpoch"].get(j) == epoch))
        if following * 2 <= len(voters):
            out.append(Obligation("leader-progress-timeout", "LeaderProgressTimeout",
                                  (role, epoch, i)))
    return out


def check_liveness(trace: Trace, bounds: TimerBounds = TimerBounds(),
                   judge: LivenessJudge | None = LivenessJudge("(every timer)")
                   ) -> list[LivenessViolation]:
    """The first violated timer obligation of each node (empty when none, or when `judge` is
    None: the judge's module has no timers this module knows).  Raises NotJudged when the
    trace cannot be judged: a step without virtual time or without a variable the timers
    depend on."""
    if judge is None or not trace.steps:
        return []
    bad = next((s for s in trace.steps if type(s.time_ms) is not int), None)
    if bad is not None:
        raise NotJudged(f"step {bad.index} (line {bad.line}) has no virtual time (time_ms)")
    anon = next((s for s in trace.steps[1:] if s.action not in NETWORK_ACTIONS and type(
        (s.params or {}).get("node") if isinstance(s.params, Mapping) else None) is not str),
        None)

    extra = tuple(v for v in PER_REPLICA if v not in NEEDED
                  and all(v in st.state for st in trace.steps))
    states = _decoded_states(trace, NEEDED + ((VOTER_SET,) if judge.voter_sets else ()) + extra)
    max_epoch = judge.max_epoch
    if max_epoch is not None and any(
            type(e) is int and e > max_epoch for st in states
            for e in st["currentEpoch"].values()):
        # KRaft.tla's guard `currentEpoch[i] < MaxEpoch` bounds a run that stays within
        # MaxEpoch (a bounded simulation never times out in MaxEpoch); a trace beyond it was
        # not bounded by it (judged with the bounds raised), so every epoch has its timers
        max_epoch = None
    voters: set[str] = set()
    if judge.voter_sets:                                      # every replica may become one
        voters = {v for v in states[0]["role"] if type(v) is str}
    else:
        for fe in states[0]["followerEndOffset"].values():    # [Server -> [Voters -> Int]]
            if isinstance(fe, Mapping):
                voters |= {v for v in fe if type(v) is str}
    timer_voters = voters if judge.timeout_voters is None else set(judge.timeout_voters)
    limit = {"fetch-timeout": bounds.fetch, "election-timeout": bounds.election,
             "leader-progress-timeout": bounds.progress}
    open_: dict[str, dict[tuple, tuple[int, int]]] = {i: {} for i in timer_voters & voters}
    found: dict[str, LivenessViolation] = {}
    prev: dict | None = None
    for step, state in zip(trace.steps, states):
        named = step.params.get("node") if isinstance(step.params, Mapping) else None
        # who acted: the node the step names and every node whose own state changed (in
        # KRaft.tla only replica i's actions change i's variables), so that neither a missing
        # nor a wrong `params.node` hides a node seen alive
        changed = _changed_nodes(prev, state) if prev is not None else set()
        acting = changed | ({named} if type(named) is str else set())
        restarted = acting if step.action in RESTARTS else set()
        t = step.time_ms
        # evidence of life: an acting node with an obligation open past its deadline
        for actor in sorted(acting - restarted):
            if actor not in open_ or actor in found:
                continue
            for ob, (k0, t0) in open_[actor].items():
                if t - t0 > limit[ob.timer]:
                    found[actor] = LivenessViolation(
                        actor, ob.timer, ob.action, k0, t0, limit[ob.timer], step.index, t,
                        {"role": ob.key[0], "epoch": ob.key[1], "leader": ob.key[2]})
                    break
        for i, opened in open_.items():
            if i in restarted:
                opened.clear()                  # the timers are re-armed on restart
            mine = voters
            if judge.voter_sets:
                vs = state[VOTER_SET].get(i)
                mine = {v for v in vs if type(v) is str} if isinstance(vs, frozenset) else set()
            now = set(_obligations(state, i, mine, max_epoch))
            for ob in list(opened):
                if ob not in now:
                    del opened[ob]
            for ob in now:
                opened.setdefault(ob, (step.index, t))
        prev = state
    if not found and anon is not None:
        # a node seen acting is the evidence of life: a step that hides who acted (and changes
        # no replica's own state, e.g. a Send) may hide a node past its deadline
        raise NotJudged(f"step {anon.index} ({anon.action}, line {anon.line}) does not name "
                        "the acting node (params.node)")
    return [found[i] for i in sorted(found)]


def judge_liveness(trace: Trace, result: dict, judge: LivenessJudge | None,
                   bounds: TimerBounds = TimerBounds()) -> dict:
    """Turn a `valid` verdict into `invalid` when a timer obligation is violated: the failed
    step is where the node was seen acting past its deadline; `liveness` lists every node's
    first violation.  A valid trace whose liveness cannot be judged keeps its verdict (its
    safety was judged) and says why in `liveness_not_judged` (counted in the summary).
    Other verdicts are returned unchanged (their first failure stands)."""
    if result.get("verdict") != "valid":
        return result
    if judge is None:
        return result
    try:
        found = check_liveness(trace, bounds, judge)
    except NotJudged as e:
        result["liveness_not_judged"] = str(e)
        return result
    result["liveness_judged_by"] = judge.config
    if found:
        first = min(found, key=lambda v: v.seen_at_step)
        result["verdict"] = "invalid"
        result["failed_step"] = first.seen_at_step
        result["liveness"] = [v.to_json() for v in found]
        result["diagnosis"] = {"kind": "liveness", "summary": first.summary(),
                               "violations": result["liveness"]}
    return result
