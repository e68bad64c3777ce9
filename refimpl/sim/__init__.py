"""The protocol-agnostic deterministic discrete-event simulator.

`protocol.py` defines the adapter interface a protocol implements; `simulator.py` runs one
seed; `runner.py` runs many and writes traces and the manifest; `faults.py` holds the fault
profiles and `bounds.py` reads a TLC config's CONSTANTS for bounded mode.
"""
