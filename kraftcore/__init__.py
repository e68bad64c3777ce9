"""kraftcore: the foundation of kraftcheck, imported by every other package.

Canonical TLA+ values (values, tla_values), where things live (paths), atomic outputs and
text safe to print (output), review checks on the spec (speclint) and the TLC harness (tlc/).
The layers, enforced by tests/test_layering.py:

    kraftcheck (CLI)  ->  refimpl, trace_checker, spark_trace_analysis, proofs  ->  kraftcore

kraftcore imports nothing of the project; the packages in the middle never import kraftcheck.
"""
