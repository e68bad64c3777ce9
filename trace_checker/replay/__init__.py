"""Model-guided replay (issue 33): the spec's state graph driven edge by edge on an
implementation.

Trace validation (trace_checker) checks one direction: what an implementation did is a
behaviour of the spec.  Replay checks the other: every transition of a dumped state graph is
something the implementation can do.  For each target edge a shortest path from an initial
state is driven on the implementation, one driver event per spec step, and after each step the
implementation's projected state must equal the path's state.

    driver.py   the Driver protocol (reset / snapshot / restore / apply(step)) and the refimpl
                driver (any refimpl.sim.protocol.ProtocolAdapter)
    kafka.py    the Kafka driver: the kafka_harness serve mode (fails closed when absent)
    engine.py   target edges, shared-prefix replay, outcomes, diagnosis
    report.py   the coverage report (JSON) and the divergence traces (kraftcheck-trace/1)

docs/replay.md is the user's guide.
"""

from __future__ import annotations

__all__ = ["driver", "engine", "report", "kafka"]
