"""PySpark jobs over trace corpora too large for one process: `kraftcheck stats`.

How well does the implementation conform to the spec?  Over JSON Lines corpora of refimpl
traces (and the trace checker's verdicts) these jobs compute, as Parquet tables and a
self-contained HTML report (docs/spark-stats.md):

    ingest.py       JSON Lines -> Parquet with an explicit schema; bad rows counted, never dropped
    observe.py      per step: the state's fingerprint and observation columns (one Python pass)
    graph.py        the TLC state graph as tables of fingerprints and labelled edges
    validate.py     distributed validation: steps joined with the graph's edges
    conformance.py  verdicts and steps by protocol, fault profile and planted bug
    coverage.py     spec states, edges and actions visited, as a share of the graph
    metrics.py      elections, latencies, truncations, HWM lag, leaderless time, data loss
    report.py       the HTML report with embedded matplotlib plots
    jobs.py         run_stats: every stage, written atomically
    session.py      the SparkSession: embedded local[*] or --master spark://...
    code_archive.py the project's code as a content-addressed zip for the executors (addPyFile)
    schema.py, vocabulary.py   the explicit schemas; the action names a trace may use
"""
