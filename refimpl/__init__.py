"""Reference implementations of the KRaft protocols and their deterministic simulator.

refimpl.kraft   KIP-595 (Raft metadata quorum): pure node state machine, rules, spec mapping.
refimpl.elr     KIP-966 (eligible leader replicas).
refimpl.sim     The protocol-agnostic discrete-event simulator (network, faults, invariants).
refimpl.trace   The JSON Lines trace format (kraftcheck-trace/1) and ITF export.
refimpl.bugs    The registry of planted bugs (`--bug NAME`).
"""
