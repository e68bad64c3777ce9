"""The bridge from Apache Kafka's own code to the suite (issues 31 and 32).

kafka_harness/ (Java, built by `make setup`) drives Kafka's raft client (KIP-595) and its KIP-966
controller code deterministically and writes each run as raw spec steps (PROTOCOL.md); this
package runs it (toolchain.py), turns each raw run into a `kraftcheck-trace/1` trace with the
refimpl's writer and checks the spec's invariants online on the projected states (wrap.py,
kraft_invariants.py): `kraftcheck simulate --impl kafka` (raft.py; elr.py for --protocol elr).

Layering: imports kraftcore, refimpl and trace_checker, never kraftcheck (tests/test_layering.py).
"""

# the environment faults the raft harness can plant (--plant; kafka_bridge/raft.py)
RAFT_PLANTS = ("lying-flush", "forgetful-store", "misdeliver")
