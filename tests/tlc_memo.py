"""One TLC run per manifest config per test process.

tests/test_spec_models.py checks every ci and bugs config of tlc_configs/*.toml; other tests
read the counterexample of some of those configs.  They share the run: each such test carries
the config's xdist group (`config_group(name)`), so pytest-xdist's loadgroup scheduling sends
them to the same process, where `manifest_run(name)` runs TLC once.  Configs of different
groups spread over both test processes.
"""

from __future__ import annotations

import functools

import pytest

from kraftcore.tlc.manifest import load_manifest
from kraftcore.tlc.runner import TLCResult, run_config

ENTRIES = {e.name: e for e in load_manifest()}


def config_group(name: str) -> pytest.MarkDecorator:
    if name not in ENTRIES:
        raise KeyError(f"{name} is not a config of tlc_configs/*.toml")
    return pytest.mark.xdist_group(f"tlc:{name}")


@functools.cache
def manifest_run(name: str) -> TLCResult:
    """TLC on the manifest's config `name`, with its own bounds and worker count (or
    KRAFTCHECK_TLC_WORKERS); the result is shared by every test of this process, and through
    the TLC result cache (kraftcore/tlc/cache.py) with `kraftcheck tlc suite` and the demo:
    TLC's output of an identical run (same modules, config, jar, options) is parsed and
    judged again instead of running TLC again.

    A config whose state graph other tests load (GRAPHS_THE_TESTS_LOAD) is run once, with the
    dump: the graph build stores TLC's result in the result cache (a dump run's output serves a
    plain run), so the plain run below is a cache hit instead of a second TLC run."""
    if name in GRAPHS_THE_TESTS_LOAD:
        from trace_checker.fullgraph import load_graph
        load_graph(name)
    return run_config(ENTRIES[name], cache=True)


# ci configs that are also the trace checker's graphs in the tests (tests/test_kafka_*.py,
# test_replay.py, test_refimpl_elr_sim.py, ...): 34,057 + 56,833 + 169,132 states explored once
GRAPHS_THE_TESTS_LOAD = frozenset({"kraft-graph-small", "kraft-graph-small-kafka-3.7",
                                   "elr-graph-small"})
