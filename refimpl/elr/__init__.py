"""KIP-966 (Eligible Leader Replicas) reference implementation.

Pure state machines for the controller (`controller.py`), the brokers that lead and follow
(`broker.py`) and the producer / admin client (`client.py`); the rules shared with the TLA+ spec
(`rules.py`); the online invariants (`invariants.py`); the one mapping onto spec/ELR.tla's
variables (`spec_mapping.py`); and the simulator adapter (`adapter.py`, class `ELRAdapter`).
See docs/refimpl-elr.md.
"""
