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


RULES: dict[tuple[str, str], list[Rule]] = {
    ("kraft", "refimpl"): [kraft_discovery_destination, spec_choice_not_taken],
    ("reassign", "refimpl"): [spec_choice_not_taken],
    ("kraft", "kafka"): [kafka_sends_at_once, kafka_vote_forgotten_on_leader,
                         spec_choice_not_taken],
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
