"""Known reasons why an implementation cannot take a spec step that is NOT a bug.

The spec allows more than an implementation does wherever the KIP leaves a choice open ("send
Fetch to any of the voters at random") and the implementation makes it deterministically.  An
edge whose failure matches such a rule is `not_drivable` with the rule's reason (each rule
cites the spec, the KIP and the code that decides); everything else is a divergence.

A rule sees the failed edge and the driver's result (the nearest event, the state it reached,
the per-variable diff) and returns "class: explanation" or None.  A class starting with
"finding " classifies a divergence (a known deviation of the implementation, e.g. the Kafka
harness's findings) without making it not drivable: the edge stays diverged.
"""

from __future__ import annotations

from collections.abc import Callable

from trace_checker.graph import StateGraph
from trace_checker.replay.driver import Applied

__all__ = ["explainer", "RULES"]

Rule = Callable[[StateGraph, tuple, Applied, dict], str | None]


def _msgs_diff(diag: dict) -> tuple[list, list] | None:
    """(messages the spec expected but the implementation did not send, messages the
    implementation sent instead), when msgs is the only differing variable."""
    if diag.get("differing_variables") != ["msgs"]:
        return None
    paths = diag["diff"]["msgs"]["paths"]
    missing = [p for p in paths if p.get("observed") == "(absent)"]
    extra = [p for p in paths if p.get("expected") == "(absent)"]
    return missing, extra


def kraft_discovery_destination(g: StateGraph, edge: tuple, res: Applied, diag: dict
                                ) -> str | None:
    """SendFetchRequest of a replica that knows no leader, to another voter than the one the
    refimpl asks next."""
    s, a, d = edge
    if g.actions[a] != "SendFetchRequest":
        return None
    md = _msgs_diff(diag)
    src_state = g.state(s)
    if md is None:
        # the refimpl had no Fetch to send at all from this replica: only explained when the
        # expected Fetch is a discovery Fetch (checked below from the expected state)
        if res.event is not None:
            return None
    exp_new = [m for m in _bag(g.state(d).get("msgs")) if _bag(src_state.get("msgs")).get(m, 0)
               < _bag(g.state(d).get("msgs"))[m]]
    if len(exp_new) != 1:
        return None
    m = exp_new[0]
    if m.get("type") != "FetchRequest":
        return None
    node = m["src"]
    if src_state["leaderId"][node] != "Nil" or src_state["role"][node] not in ("Unattached",
                                                                                "Voted"):
        return None
    return ("discovery-fetch-destination: the refimpl asks the voters in turn (round robin, "
            "moving on after a request timeout: refimpl/kraft/node.py send_fetch), the spec "
            "lets a replica that knows no leader ask any voter (KIP-595 \"BeginQuorumEpoch\": "
            "observers send Fetch \"to any of the voters at random\"; spec/KRaft.tla "
            f"SendFetchRequest): {node}'s Fetch to {m['dest']} is a choice the refimpl does "
            "not make from this state")


def _bag(v) -> dict:
    return dict(v.items()) if hasattr(v, "items") else {}


def spec_choice_not_taken(g: StateGraph, edge: tuple, res: Applied, diag: dict) -> str | None:
    """The implementation took the step's action to ANOTHER successor the spec allows from the
    same state (the spec leaves a choice open -- which caught-up observer to promote, which
    voter to ask -- and the implementation decides it deterministically): its step is a spec
    step (the trace checker judges it valid), the spec's other choice is not one it makes."""
    s, a, d = edge
    if res.matched or res.state is None or res.label != g.actions[a]:
        return None
    for b, t in g.succ[s]:
        if b == a and t != d and g.state(t) == res.state:
            return (f"spec-choice-not-taken: the implementation's {g.actions[a]} from this state "
                    f"reaches another successor the spec allows by {g.actions[a]} (state "
                    f"{t}); the spec's choice of state {d} is one it does not make here")
    return None


def kafka_sends_at_once(g: StateGraph, edge: tuple, res: Applied, diag: dict) -> str | None:
    """The harness's serve mode lets a replica finish its work at the command's instant: the
    requests a step sends go out in the same answer, so a spec path that takes another step
    before the Send cannot be followed (a limit of the harness's schedule, not a deviation of
    Kafka from the KIP)."""
    why = res.reason or ""
    if res.matched or not why.startswith("Kafka went on with Send"):
        return None
    return ("harness-sends-at-once: kafka_harness serve sends a replica's requests within the "
            "command that made them (kafka_harness/raft/README.md \"serve\"); the spec's Send* is "
            f"a separate step, and this path takes {g.actions[edge[1]]} first")


def kafka_vote_forgotten_on_leader(g: StateGraph, edge: tuple, res: Applied, diag: dict
                                   ) -> str | None:
    """A new leader whose projected votedId is Nil where the spec keeps its own vote: the
    harness's finding F1 (Kafka deviates from KIP-595).  The edge stays diverged; the rule
    only classifies it (a "finding" class)."""
    if diag.get("differing_variables") != ["votedId"]:
        return None
    paths = diag["diff"]["votedId"]["paths"]
    if not paths or any(p.get("observed") != "Nil" for p in paths):
        return None
    return ("finding F1 KafkaVoteForgottenOnLeader: Kafka 3.7 writes no VotedId once the "
            "epoch's leader is known (ElectionState.withElectedLeader; kafka_harness/raft/"
            "FINDINGS.md F1, docs/kafka-conformance.md): Kafka deviates from KIP-595 "
            "\"Persistent State\"")


def _sent(g: StateGraph, edge: tuple) -> dict | None:
    """The one request the spec's Send* step `edge` puts in flight (None: not one)."""
    s, _, d = edge
    before, after = _bag(g.state(s).get("msgs")), _bag(g.state(d).get("msgs"))
    new = [m for m in after if after[m] > before.get(m, 0)]
    return new[0] if len(new) == 1 else None


def _consumed(g: StateGraph, edge: tuple, mtype: str) -> tuple[dict, dict] | None:
    """(the source state, the one message of type `mtype` the spec's Receive* step `edge`
    takes out of flight); None when it takes none, several, or one of another type."""
    s, _, d = edge
    src = g.state(s)
    before, after = _bag(src.get("msgs")), _bag(g.state(d).get("msgs"))
    gone = [m for m in before if after.get(m, 0) < before[m]]
    return (src, gone[0]) if len(gone) == 1 and gone[0]["type"] == mtype else None


# Kafka 3.7's timers in the harness (kafka_harness/raft Replica.java): request 2000 ms, election
# 1000 ms (+ back-off up to 1000 ms), fetch 2000 ms.
_TIMER_FIRST = {
    "no-leader-voter": "a voter that knows no leader sends no discovery Fetch in Kafka 3.7 "
                       "(KafkaRaftClient.pollUnattachedAsVoter / pollVoted wait for the election "
                       "timer only; docs/kafka-conformance.md \"Checked and conforming\"): its "
                       "election timer fires",
    "FetchRequest": "Kafka re-sends a lost Fetch only after the request timeout (2000 ms), its "
                    "fetch timeout (2000 ms) or election timer fires first",
    "EndQuorumEpochRequest": "a Resigned leader re-sends EndQuorumEpoch after the request "
                             "timeout (2000 ms); its election timer (1000 ms) fires first",
    "VoteRequest": "a candidate re-sends a lost VoteRequest after the request timeout (2000 ms); "
                   "its election timer (1000 ms + back-off) fires first",
}


def kafka_timer_first(g: StateGraph, edge: tuple, res: Applied, diag: dict) -> str | None:
    """A Send* (a request (re)sent) the spec lets happen at any moment, where Kafka's timer
    fires first when its clock moves: the spec has no clocks (KRaft.tla "Timing abstraction"),
    Kafka orders its timers.  The step Kafka takes instead (Timeout / LeaderProgressTimeout) is
    another spec step: the edge stays diverged, classified."""
    if res.matched or not g.actions[edge[1]].startswith("Send") or \
            res.label not in ("Timeout", "LeaderProgressTimeout") or \
            not (res.event or "").startswith('{"cmd": "advance"'):
        return None
    m = _sent(g, edge)
    src = g.state(edge[0])
    key = m["type"] if m is not None else None
    if m is not None and key == "FetchRequest" and src["leaderId"][m["src"]] == "Nil" and \
            src["role"][m["src"]] in ("Unattached", "Voted"):
        key = "no-leader-voter"
    why = _TIMER_FIRST.get(key, "Kafka's timer fires before it sends the request")
    who = f"{m['src']}'s {m['type']} to {m['dest']}" if m is not None else "the request"
    return (f"finding R1 timer-first: {who}: {why}; the spec, without clocks, lets it be sent "
            f"now (KRaft.tla \"Timing abstraction\"); Kafka's {res.label} is another step the "
            "spec allows")


def kafka_resends_same_voter(g: StateGraph, edge: tuple, res: Applied, diag: dict
                             ) -> str | None:
    """An observer's Fetch to the other voter, where Kafka re-sends its Fetch to the voter it
    already asked (the harness reports an equal message re-sent as DuplicateMessage)."""
    if res.matched or g.actions[edge[1]] != "SendFetchRequest" or \
            res.label != "DuplicateMessage":
        return None
    m = _sent(g, edge)
    again = res.params.get("msg") if res.params else None
    if m is None or again is None:
        return None
    if not hasattr(again, "items"):
        return None
    return (f"finding R2 observer-resends-same-voter: the spec's {m['src']} sends its next Fetch "
            f"to {m['dest']}; Kafka's re-sends to {again['dest']} (RequestManager."
            "findReadyVoter keeps a voter whose connection is not backing off; KIP-595 "
            "\"BeginQuorumEpoch\": \"to any of the voters at random\"): the re-send is the "
            "spec's DuplicateMessage")


def kafka_acts_at_once(g: StateGraph, edge: tuple, res: Applied, diag: dict) -> str | None:
    """Kafka went on with a timer step within the previous command (a zero election back-off
    drawn from the seeded Random: the next election starts at the same instant), where the
    spec's path takes another replica's step first."""
    why = res.reason or ""
    if res.matched or not why.startswith("Kafka went on with") or \
            res.label not in ("Timeout", "LeaderProgressTimeout"):
        return None
    return (f"finding R3 acts-at-once: Kafka's {res.label} came within the previous command "
            "(its timer was due at that instant: a rejected candidate's election back-off drawn "
            "0 ms by the seeded Random, kafka_harness serve seed 0), the spec's path takes "
            f"{g.actions[edge[1]]} first; a timer's moment is a choice the harness's clock fixed")


def elr_refimpl_choice(g: StateGraph, edge: tuple, res: Applied, diag: dict) -> str | None:
    """KIP-966: a step the spec's leader may take that the refimpl's does not (the ELR
    driver names the class in its reason: trace_checker/replay/elr.py `_why_not`)."""
    from trace_checker.replay.elr import CHOICES

    why = res.reason or ""
    if res.matched or not why.startswith(CHOICES):
        return None
    return why


def kafka_discovers_and_appends(g: StateGraph, edge: tuple, res: Applied, diag: dict
                                ) -> str | None:
    """A FetchResponse (error NONE) of this epoch naming a leader to a replica that knows
    none: the spec's replica only follows the leader (KRaft.tla HandleFetchResponse, "the same
    epoch with a leader the fetcher did not know"), Kafka's also appends the response's records
    and takes its high watermark in the same step (finding F15, found by replay as H3; it
    diverges only on a judge with KafkaFetchResponseLeaderAndRecordsAtOnce off)."""
    if res.matched or g.actions[edge[1]] != "ReceiveFetchResponse" or \
            res.label != "ReceiveFetchResponse" or \
            not set(diag.get("differing_variables") or ()) <= {"log", "highWatermark"}:
        return None
    found = _consumed(g, edge, "FetchResponse")
    if found is None:
        return None
    src, m = found
    i = m["dest"]
    if m["error"] != "NONE" or m["epoch"] != src["currentEpoch"][i] or \
            src["leaderId"][i] != "Nil" or m["leaderId"] in ("Nil", i) or not m["records"]:
        return None
    return (f"finding F15 discover-and-append: {i} learns leader {m['leaderId']} from a "
            "FetchResponse of its epoch and, in the same step, appends its records "
            "(KafkaRaftClient.maybeHandleCommonResponse: transitionToFollower, then \"if error "
            "== NONE return Optional.empty()\" -- \"This handling allows an observer to "
            "discover the leader and append to the log in the same Fetch request\"); "
            "KRaft.tla's HandleFetchResponse without KafkaFetchResponseLeaderAndRecordsAtOnce "
            "only follows (docs/kafka-conformance.md F15)")


def _vote_refusal(g: StateGraph, edge: tuple, res: Applied, diag: dict, labels: tuple,
                  error: str) -> tuple[dict, dict] | None:
    """(source state, message) when the spec's ReceiveVoteResponse `edge` consumes one
    not-granted VoteResponse with `error`, Kafka's step is one of `labels`, and only the
    receiver's role and vote sets differ; else None."""
    if res.matched or g.actions[edge[1]] != "ReceiveVoteResponse" or \
            res.label not in labels or res.state is None or \
            not set(diag.get("differing_variables") or ()) <= \
            {"role", "votesGranted", "votesRejected"}:
        return None
    found = _consumed(g, edge, "VoteResponse")
    if found is None or found[1]["voteGranted"] or found[1]["error"] != error:
        return None
    return found


def kafka_rejected_candidate_backs_off(g: StateGraph, edge: tuple, res: Applied, diag: dict
                                      ) -> str | None:
    """A candidate receiving a VoteResponse (error NONE) that rejects it: the spec's steps down
    to Voted (KIP-595 "Vote Response Handling": "can immediately step down and backoff"),
    Kafka's stays Candidate with the rejection recorded while it backs off
    (KafkaRaftClient.handleVoteResponse -> startBackingOff): finding F5, modelled by
    KafkaRejectedCandidateBacksOff (on in the kafka-3.7 judge).  Only the receiver's role and
    vote sets may differ."""
    found = _vote_refusal(g, edge, res, diag, ("ReceiveVoteResponse",), "NONE")
    if found is None:
        return None
    src, m = found
    i = m["dest"]
    if src["role"][i] != "Candidate" or res.state["role"][i] != "Candidate" or \
            m["src"] not in res.state["votesRejected"][i]:
        return None
    return (f"finding F5 KafkaRejectedCandidateBacksOff: candidate {i} rejected by {m['src']} "
            "stays Candidate, the rejection recorded, while it backs off "
            "(KafkaRaftClient.handleVoteResponse: isVoteRejected -> startBackingOff); KIP-595 "
            "\"Vote Response Handling\" and KRaft.tla step down to Voted "
            "(docs/kafka-conformance.md F5)")


def kafka_fenced_vote_response_ignored(g: StateGraph, edge: tuple, res: Applied, diag: dict
                                      ) -> str | None:
    """A candidate receiving a VoteResponse with error FENCED_LEADER_EPOCH of its own epoch
    (the answer to a request of an earlier epoch, the candidate has since reached the
    responder's): KRaft.tla counts every not-granted response of the current epoch as a
    rejection (HandleVoteResponse); Kafka counts none: the response answers a request of the
    earlier epoch it no longer waits for, so it is dropped unread (the harness's deliver:
    KraftAccess.responseExpected, README "Steps": DropMessage), and one it does read is
    consumed as "handled" by maybeHandleCommonResponse (FENCED_LEADER_EPOCH: maybeTransition to
    the same epoch, no leader named: no change).  Found by replay (H4,
    docs/kafka-conformance.md "Replay divergences")."""
    found = _vote_refusal(g, edge, res, diag, ("ReceiveVoteResponse", "DropMessage"),
                          "FENCED_LEADER_EPOCH")
    if found is None:
        return None
    src, m = found
    i = m["dest"]
    if src["role"][i] != "Candidate" or m["epoch"] != src["currentEpoch"][i] or \
            res.state["role"][i] != "Candidate" or \
            res.state["votesRejected"][i] != src["votesRejected"][i] or \
            res.state["votesGranted"][i] != src["votesGranted"][i]:
        return None
    how = ("ignores it unread: it answers a VoteRequest of the earlier epoch, no longer "
           "awaited (KafkaRaftClient.handleInboundMessage: \"Ignoring response ... since it is "
           "no longer needed\"; the harness's DropMessage)" if res.label == "DropMessage" else
           "consumes it without counting a rejection (maybeHandleCommonResponse: "
           "maybeTransition to the same epoch, no leader: no change)")
    return (f"finding H4 fenced-vote-response-ignored: candidate {i} receives {m['src']}'s "
            f"VoteResponse FENCED_LEADER_EPOCH of its own epoch; Kafka {how}; KRaft.tla's "
            "HandleVoteResponse counts it as a rejection (docs/kafka-conformance.md H4)")


def kafka_fenced_begin_quorum_epoch_response_not_awaited(g: StateGraph, edge: tuple,
                                                         res: Applied, diag: dict
                                                         ) -> str | None:
    """A BeginQuorumEpochResponse with error FENCED_LEADER_EPOCH of a LARGER epoch than its
    receiver's (the leader's request reached a voter that has since moved on): KRaft.tla's
    HandleBeginQuorumEpochResponse steps the receiver down to the response's epoch (KIP-595
    "BeginQuorumEpoch Response Handling"); Kafka 3.7 steps down too when it reads the response
    (maybeHandleCommonResponse: epoch > quorum.epoch() -> maybeTransition), so a receiver that
    stays where it was has NOT read it: the response answers a request Kafka no longer awaits
    (KafkaRaftClient.handleInboundMessage "Ignoring response ... since it is no longer needed":
    ConnectionState.isResponseExpected is false), which the harness delivers as DropMessage
    (kafka_harness/raft/README.md "Steps").  In the kafka-3.7 judge's graph the receiver is a
    leader that resigned after sending (LeaderProgressTimeout / Resign -> transitionToResigned
    -> resetConnections clears every in-flight correlation id); a leader that re-sent the
    request (request timeout) ignores the answer to the first copy the same way.  H4's
    mechanism on BeginQuorumEpoch (docs/kafka-conformance.md H5); the edge stays diverged."""
    if res.matched or g.actions[edge[1]] != "ReceiveBeginQuorumEpochResponse" or \
            res.label != "DropMessage" or res.state is None:
        return None
    found = _consumed(g, edge, "BeginQuorumEpochResponse")
    if found is None or found[1]["error"] != "FENCED_LEADER_EPOCH":
        return None
    src, m = found
    i = m["dest"]
    if m["epoch"] <= src["currentEpoch"][i] or \
            res.state["currentEpoch"][i] != src["currentEpoch"][i] or \
            res.state["role"][i] != src["role"][i]:
        return None
    why = ("it resigned since it sent the request (KafkaRaftClient.transitionToResigned -> "
           "resetConnections: RequestManager.resetAll clears every in-flight correlation id)"
           if src["role"][i] == "Resigned" else
           "the request was re-sent since (a later correlation id is in flight)")
    return (f"finding H5 fenced-begin-quorum-epoch-response-not-awaited: {src['role'][i]} {i} "
            f"(epoch {src['currentEpoch'][i]}) receives {m['src']}'s BeginQuorumEpochResponse "
            f"FENCED_LEADER_EPOCH of epoch {m['epoch']}; Kafka ignores it unread, {why} "
            "(ConnectionState.isResponseExpected false; KafkaRaftClient.handleInboundMessage: "
            "\"Ignoring response ... since it is no longer needed\"; the harness's DropMessage); "
            "KRaft.tla's HandleBeginQuorumEpochResponse steps it down to the response's epoch, "
            "as Kafka does for a response it awaits (maybeHandleCommonResponse -> "
            "maybeTransition; docs/kafka-conformance.md H5)")


RULES: dict[tuple[str, str], list[Rule]] = {
    ("kraft", "refimpl"): [kraft_discovery_destination, spec_choice_not_taken],
    ("reassign", "refimpl"): [spec_choice_not_taken],
    ("elr", "refimpl"): [elr_refimpl_choice, spec_choice_not_taken],
    ("kraft", "kafka"): [kafka_sends_at_once, kafka_vote_forgotten_on_leader,
                         spec_choice_not_taken, kafka_timer_first, kafka_resends_same_voter,
                         kafka_acts_at_once, kafka_discovers_and_appends,
                         kafka_rejected_candidate_backs_off,
                         kafka_fenced_vote_response_ignored,
                         kafka_fenced_begin_quorum_epoch_response_not_awaited],
}


def explainer(protocol: str, impl: str) -> Callable | None:
    rules = RULES.get((protocol, impl))
    if not rules:
        return None

    def explain(g: StateGraph, edge: tuple, res: Applied, diag: dict) -> str | None:
        for r in rules:
            why = r(g, edge, res, diag)
            if why is not None:
                return why
        return None
    return explain
