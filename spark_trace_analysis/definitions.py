"""What every figure of the report means: one definition per metric, shown on the page.

The report links each column heading and each headline figure to its entry here (anchor
`#def-<key>`); docs/spark-stats.md gives the same definitions at more length.  Times are the
traces' virtual milliseconds (`time_ms`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Metric", "METRICS", "by_key"]


@dataclass(frozen=True)
class Metric:
    key: str      # anchor: #def-<key>
    name: str     # the heading used on the page
    group: str    # verdicts | coverage | behaviour | actions
    text: str     # the definition


METRICS: tuple[Metric, ...] = (
    # Verdicts and steps (conformance.py)
    Metric("valid", "valid", "verdicts",
           "A trace every step of which is a transition of the spec's state graph (or accepted "
           "by the trace checker, when its verdicts are given with --verdicts)."),
    Metric("invalid", "invalid", "verdicts",
           "A trace with a step the spec does not allow; its first failing step is the step "
           "number the verdict names."),
    Metric("out_of_scope", "out of scope", "verdicts",
           "A trace that leaves the bounded model the graph was explored under (a state outside "
           "the graph, or other bounds): it could not be judged, so it is neither valid nor "
           "invalid."),
    Metric("malformed", "malformed", "verdicts",
           "A trace file that is not a complete kraftcheck-trace/1 trace (a bad line, a missing "
           "header or footer): its bad rows name the file, line and reason."),
    Metric("unchecked", "unchecked", "verdicts",
           "A well-formed trace with no verdict: no --graph and no --verdicts were given, or the "
           "checker's verdicts do not name it."),
    Metric("bad_rows", "bad rows", "verdicts",
           "Lines of the corpus that could not be read as a trace line (not JSON, a missing or "
           "mistyped field): each is listed with its file, line and reason."),
    Metric("steps_valid", "steps valid", "verdicts",
           "Steps judged valid: every step of a valid trace, and the steps before the failing one "
           "of an invalid trace."),
    Metric("steps_invalid", "steps invalid", "verdicts",
           "The failing step of each invalid trace (one per invalid trace)."),
    Metric("steps_unchecked", "steps unchecked", "verdicts",
           "Steps after the failing step of an invalid trace, and every step of an unchecked "
           "trace."),
    Metric("first_failing_step", "first failing step", "verdicts",
           "For an invalid trace, the number of the first step the spec does not allow."),
    # Coverage (coverage.py)
    Metric("states_visited", "spec states visited", "coverage",
           "Distinct states of the spec's state graph that some trace of the graph's protocol and "
           "bounds reaches, over the graph's states."),
    Metric("edges_visited", "edges visited", "coverage",
           "Distinct graph edges (state, action, next state) that some trace step takes, over the "
           "graph's edges; per action, the share of that action's edges."),
    Metric("never_exercised", "actions never exercised", "coverage",
           "Actions of the spec's Next with edges in the graph none of which any trace takes."),
    # Protocol behaviour (metrics.py)
    Metric("traces", "traces", "behaviour",
           "Traces in the group (a protocol and a fault profile, or a protocol and a planted "
           "bug)."),
    Metric("elections_per_trace", "elections / trace", "behaviour",
           "Elections per trace, averaged: an election is a step whose leader is set and differs "
           "(node or epoch) from the previous step's."),
    Metric("election_latency", "election latency", "behaviour",
           "The election's time minus the time the run of leaderless steps just before it began "
           "(the trace start when it began leaderless); 0 when leadership passes without a "
           "leaderless step. p50 / p95 over the group's elections."),
    Metric("commit_latency", "commit latency", "behaviour",
           "For each log offset: the first time the highest high watermark of any node reaches it "
           "minus the first time the longest log reaches it. p50 / p95 over the group's "
           "committed offsets."),
    Metric("leaderless_share", "leaderless share", "behaviour",
           "The time without a leader (the sum, over steps without a leader, of the time to the "
           "next step) over the trace's duration, averaged over the group's traces."),
    Metric("truncations_per_trace", "truncations / trace", "behaviour",
           "Node-steps at which a node's log became shorter than at the previous step (a "
           "DivergingEpoch truncation, an unclean restart), averaged per trace."),
    Metric("max_truncation_depth", "max depth", "behaviour",
           "The most records one node's log lost in one step, over the group."),
    Metric("hwm_lag", "HWM lag", "behaviour",
           "The leader's log length minus its high watermark (records appended but not yet "
           "committed), averaged over time over the steps with a leader; and its maximum."),
    Metric("unclean_recoveries", "unclean recoveries", "behaviour",
           "(KIP-966) Elections of a leader that was in neither the ISR nor the ELR of the "
           "previous step. KRaft has none by definition."),
    Metric("data_loss_events", "data-loss events", "behaviour",
           "Steps after which some node's log is shorter than that node's high watermark at the "
           "previous step (a committed record removed), or (KIP-966) after which more "
           "acknowledged records are missing from the leader's log than before."),
    Metric("baseline", "baseline", "behaviour",
           "Each fault profile is compared with the profile `none` (no loss, partitions or "
           "crashes) of the same protocol, and each planted bug with the runs of the same "
           "protocol and fault profile without a bug (`none`): the small figure under a value "
           "is its difference from the baseline's value (red: higher, green: lower)."),
    # Actions (conformance.action_table)
    Metric("action_steps", "steps", "actions", "Trace steps that claim the action."),
    Metric("action_traces", "traces", "actions", "Traces with at least one step of the action."),
    Metric("action_failures", "failing steps", "actions",
           "Invalid traces whose first failing step claims the action."),
)


def by_key() -> dict[str, Metric]:
    return {m.key: m for m in METRICS}
