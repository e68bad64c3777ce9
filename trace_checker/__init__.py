"""Trace checking by lookup in TLC's own state graph.

A trace (JSON Lines written by the refimpl simulator, see docs/trace-format.md) is checked step
by step against the successors TLC computes for the spec, instead of running one TLC process per
trace on a trace-constrained spec:

* full-graph mode (`--graph CFG`): TLC dumps the whole state graph of a bounded, symmetry-free
  config once (`-dump dot,actionlabels`); the parsed index is cached on disk and every step is a
  dictionary lookup;
* neighbourhood mode (`--lazy`): the successors of every distinct source state of the whole
  corpus are computed in ONE TLC run over a generated module (chunked when large).

Modules, one job each:

    dot.py           reading TLC's dot dump (node and edge lines, label unescaping)
    codec.py         per-variable value tables: states as tuples of small integers
    graph.py         StateGraph: the index (state -> labelled successors), networkx view
    cache.py         cache keys (spec files, config, TLC jar) and the on-disk index cache
    fullgraph.py     building / loading the full graph of a manifest config
    tlagen.py        generating TLA+ modules and configs from trace values, safely
    neighbourhood.py successors of given states in one TLC run; initial states
    traces.py        parsing trace files defensively (malformed -> file, line, field)
    observe.py       trace states -> codec keys, each distinct value decoded once
    partial.py       candidate-set stepping (partial observation)
    diagnose.py      nearest allowed successor, per-variable diff, enabled actions
    verdict.py       verdict records and their JSON / text forms
    corpus.py        the driver: modes, recheck, parallel workers, summary, --out
    tlashare.py      many states in one generated module, each distinct value written once
    liveness.py      timer obligations against the trace's virtual time (liveness on traces)
    coverage.py      spec actions and graph edges a corpus never took
"""
